import { integerOption, noPositionals, type CommandDefinition } from '../cli-command.js';
import { withEngram } from '../cli-engram.js';
import { createProgressBar } from '../progress-bar.js';
import { formatFields } from '../table-format.js';

/** `engram reindex`: compute the vectors memories lack, or all of them after a model change. */
export const reindexCommand: CommandDefinition = {
  name: 'reindex',
  summary: 'Compute vectors for memories that have none (all of them after an embedding model change)',
  usage: 'reindex [options]',
  options: {
    'batch-size': {
      type: 'string',
      valueName: 'n',
      description: 'Memories embedded per round (setting embedding.batchSize, default 64)',
    },
  },
  details:
    'Needs an embedder (embedding.provider openai-compatible, embedding.baseUrl, embedding.model). The store records the\n' +
    'model and vector length; when either changes, every old vector is dropped and all memories are embedded again,\n' +
    'so two vector spaces never mix. Safe to interrupt: a rerun continues with what is still missing.',
  async run(invocation) {
    const { values, io } = invocation;
    noPositionals(invocation);
    const batchSize = integerOption(values, 'batch-size', { min: 1, max: 10_000 });
    return withEngram(invocation, async (opened) => {
      const bar = createProgressBar(io.stderr, 'embedding');
      let report;
      try {
        report = await opened.engram.reindex({
          ...(batchSize !== undefined && { batchSize }),
          onProgress: ({ done, total }) => bar.update(done, total),
        });
      } finally {
        bar.finish();
      }
      const vectors = await opened.engram.storage.vectorCounts();
      const data = { ...report, vectors };
      const fields: Array<[string, string]> = [
        ['model', `${report.model} (${report.dimensions} dimensions)`],
        ...(report.spaceChanged && report.previousSpace
          ? ([
              [
                'space changed',
                `from ${report.previousSpace.model} (${report.previousSpace.dimensions} dimensions): ${report.dropped} old vectors dropped`,
              ],
            ] as Array<[string, string]>)
          : []),
        ['embedded', String(report.embedded)],
        ['skipped', String(report.skipped)],
        ['with vectors', String(vectors.stored)],
        ['without vectors', String(vectors.missing)],
      ];
      return { data, text: formatFields(fields) };
    });
  },
};
