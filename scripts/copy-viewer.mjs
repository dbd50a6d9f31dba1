// `npm run build`: the viewer's static files ship beside its compiled module (dist/surfaces/viewer/static).
import { cpSync, rmSync } from 'node:fs';

const from = new URL('../src/surfaces/viewer/static/', import.meta.url);
const to = new URL('../dist/surfaces/viewer/static/', import.meta.url);
rmSync(to, { recursive: true, force: true });
cpSync(from, to, { recursive: true });
