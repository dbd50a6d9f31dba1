// The wording of warnings moved to src/kernel/warnings.ts (one place for every surface); surfaces
// still import it from here until they switch (issue 27, phase 2).
export { warningNotes } from '../kernel/warnings.js';
