import { EngramError, isEngramError } from '../kernel/errors.js';
import { describeWarning } from '../kernel/warnings.js';
import type { NewMemory } from '../memory/memory.js';
import { checkMemoryPrivacy, type PrivacyReport } from './memory-privacy.js';

/**
 * The privacy pass over a batch (an import) with one report for the whole of it, and the words a
 * write's report becomes for a person (kinds and counts, never the secrets).
 */

/** Checks every memory of an import; the first that cannot be stored fails the whole batch, naming its place. */
export function checkImportPrivacy(
  inputs: readonly NewMemory[],
  options: { maxContentChars: number },
): { values: NewMemory[]; report: PrivacyReport } {
  const report: PrivacyReport = { redacted: [], secrets: 0, privateBlocks: 0, injectedBlocks: 0 };
  const values = inputs.map((input, index) => {
    let checked: { value: NewMemory; report: PrivacyReport };
    try {
      checked = checkMemoryPrivacy(input, options);
    } catch (error) {
      if (!isEngramError(error)) throw error;
      throw new EngramError(error.code, `Memory ${index + 1} of the import: ${error.message} Nothing was imported.`, {
        cause: error,
      });
    }
    for (const kind of checked.report.redacted) if (!report.redacted.includes(kind)) report.redacted.push(kind);
    report.secrets += checked.report.secrets;
    report.privateBlocks += checked.report.privateBlocks;
    report.injectedBlocks += checked.report.injectedBlocks;
    return checked.value;
  });
  return { values, report };
}

/** What a write left out, worded for a person: one line for secrets, one for private or injected blocks. */
export function privacyNotices(report: PrivacyReport, subject: string): string[] {
  const notices: string[] = [];
  if (report.secrets > 0)
    notices.push(
      describeWarning({
        code: 'secrets-redacted',
        details: { subject, count: report.secrets, kinds: report.redacted },
      }),
    );
  const blocks = report.privateBlocks + report.injectedBlocks;
  if (blocks > 0)
    notices.push(describeWarning({ code: 'private-content-removed', details: { subject, count: blocks } }));
  return notices;
}
