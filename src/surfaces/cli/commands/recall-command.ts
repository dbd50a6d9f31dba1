import { DEFAULT_SETTINGS } from '../../../kernel/settings.js';
import { EngramError } from '../../../kernel/errors.js';
import type { RankedMemory } from '../../../recall/ranking.js';
import type { CommandDefinition } from '../cli-command.js';
import { TYPE_NAMES, readScopes, recallFlags, readOnly, withEngram } from '../cli-engram.js';
import { recallResultJson } from '../../../recall/recall-result-json.js';
import { warningNotes } from '../../../recall/warning-notes.js';
import { ageLegend, memoryColumns } from '../memory-view.js';
import { formatTable, type TableColumn } from '../table-format.js';

const score = (value: number): string => value.toFixed(3);

/** `engram recall`: find the memories most relevant to a question. */
export const recallCommand: CommandDefinition = {
  name: 'recall',
  summary: 'Find the memories most relevant to a question',
  usage: 'recall <query…> [options]',
  options: {
    'top-k': {
      type: 'string',
      valueName: 'n',
      description: `How many memories at most (setting recall.topK, default ${DEFAULT_SETTINGS.recall.topK})`,
    },
    'min-score': {
      type: 'string',
      valueName: '0..1',
      description: `Lowest score shown, relative to the best match (setting recall.minScore, default ${DEFAULT_SETTINGS.recall.minScore})`,
    },
    scope: {
      type: 'string',
      multiple: true,
      valueName: 'a,b',
      description: 'Scopes to read (default: the current project and global)',
    },
    type: { type: 'string', multiple: true, valueName: TYPE_NAMES, description: 'Only these types (comma list)' },
    explain: { type: 'boolean', description: 'Show each result’s score parts: relevance, recency, importance weight' },
    'as-of': {
      type: 'string',
      valueName: 'date',
      description: 'What was true then: memories valid at that date, invalidated ones included',
    },
    'include-invalid': { type: 'boolean', description: 'Also show invalidated and superseded memories' },
  },
  details:
    'The query is plain words; quotes, parentheses, AND, NEAR and * are searched as text, never as query syntax.',
  async run(invocation) {
    const { values, positionals, io } = invocation;
    const query = positionals.join(' ');
    if (query.trim() === '') throw new EngramError('INVALID_INPUT', 'Nothing to recall: engram recall <query…>.');
    const flags = recallFlags(values);
    return withEngram(readOnly(invocation), async (opened) => {
      const scopes = readScopes(values, opened);
      const result = await opened.engram.recall(query, {
        scopes,
        ...flags,
        ...(typeof values['as-of'] === 'string' && { asOf: values['as-of'] }),
        ...(values['include-invalid'] === true && { includeInvalid: true }),
      });
      const data = recallResultJson(result, new Date().toISOString(), opened.loaded.settings.recall);
      const warnings = warningNotes(result.warnings, { embedderConfigured: opened.engram.embedder !== undefined });
      if (result.memories.length === 0)
        return { data, warnings, text: `No memories match in ${result.scopes.join(', ')}.` };
      const columns: Array<TableColumn<RankedMemory>> = [
        { header: 'SCORE', value: (entry) => score(entry.parts.score), align: 'right' },
        ...(values.explain === true
          ? ([
              { header: 'RELEVANCE', value: (entry) => score(entry.parts.relevance), align: 'right' },
              { header: 'RECENCY', value: (entry) => score(entry.parts.recency), align: 'right' },
              { header: 'IMPORTANCE', value: (entry) => score(entry.parts.importanceWeight), align: 'right' },
            ] satisfies Array<TableColumn<RankedMemory>>)
          : []),
        // With an embedder, relevance is fused: show where each ranking put the memory (#rank value).
        ...(values.explain === true && result.memories.some((entry) => entry.parts.vector)
          ? ([
              {
                header: 'TEXT',
                value: (entry) =>
                  entry.parts.text ? `#${entry.parts.text.rank} ${score(entry.parts.text.relevance)}` : '-',
                align: 'right',
              },
              {
                header: 'VECTOR',
                value: (entry) =>
                  entry.parts.vector ? `#${entry.parts.vector.rank} ${score(entry.parts.vector.similarity)}` : '-',
                align: 'right',
              },
            ] satisfies Array<TableColumn<RankedMemory>>)
          : []),
        // What re-ordered full-text hits: conversation context, dates, "when", the second hop, diversity.
        ...(values.explain === true && result.memories.some((entry) => entry.parts.context || entry.parts.signals)
          ? ([{ header: 'SIGNALS', value: (entry) => describeSignals(entry) || '-' }] satisfies Array<
              TableColumn<RankedMemory>
            >)
          : []),
        ...memoryColumns<RankedMemory>((entry) => entry.memory, opened.loaded.settings.recall)
          .filter((column) => column.header !== 'STATE' || values.explain !== true)
          .map((column) => (column.header === 'STATE' ? withOlderMark(column, result.memories) : column)),
      ];
      let text = formatTable(columns, result.memories, { width: io.columns, color: io.color });
      if (values.explain === true)
        text += '\n\nscore = relevance × recency × importance weight ÷ 1.5 (relevance is relative to the best match)';
      if (values.explain === true && result.memories.some((entry) => entry.parts.vector)) {
        const { embedding } = opened.loaded.settings;
        text +=
          embedding.fusion === 'reciprocal-rank'
            ? '\nrelevance = Σ 1/(k + rank) over the full-text (TEXT) and vector (VECTOR) rankings, k = embedding.fusionK'
            : `\nrelevance = full text (TEXT) × ${Number((1 - embedding.fusionWeight).toFixed(3))} + the vector similarity (VECTOR) scaled from the query's weakest to its strongest vector hit × ${embedding.fusionWeight} (embedding.fusionWeight), ÷ the best candidate's`;
      }
      if (values.explain === true && result.memories.some((entry) => entry.parts.context || entry.parts.signals))
        text += `\n${SIGNALS_LEGEND}`;
      const legend =
        values.explain === true
          ? ''
          : ageLegend(
              result.memories.map((entry) => entry.memory),
              opened.loaded.settings.recall,
            );
      const older =
        values.explain !== true && result.memories.some((entry) => entry.parts.signals?.disagrees) ? OLDER_LEGEND : '';
      const legends = [legend, older].filter((line) => line !== '').join('\n');
      if (legends !== '') text += `\n\n${legends}`;
      return { data, text, warnings };
    });
  },
};

const SIGNALS_LEGEND = [
  'signals: context+x (relevance lent by the same or an adjacent source turn and session), sitting+x (lent by a memory written within recall.contextSittingMinutes), date×f (written within a date the question names),',
  'when×f (says when, for a "when" question), hop+x (found by the second hop, via the words shown), dup~s (nearly repeats a better hit: relevance × (1 − s)),',
  'older~s than id (the newer hit id, overlap s, says otherwise: it takes the better score of the two, this one follows at most at × (1 − s/2), possibly superseded)',
].join('\n');

const OLDER_LEGEND =
  'older than #n: the memory in row n is newer and says otherwise of the same subject; this one is possibly superseded';

/** The STATE column, with "older than #n" on a memory a newer result contradicts (n: the newer's row). */
function withOlderMark(
  column: TableColumn<RankedMemory>,
  memories: readonly RankedMemory[],
): TableColumn<RankedMemory> {
  const rows = new Map(memories.map((entry, index) => [entry.memory.id, index + 1]));
  return {
    ...column,
    value: (entry) => {
      const newer = entry.parts.signals?.disagrees?.newer;
      if (newer === undefined) return column.value(entry);
      const row = rows.get(newer);
      return `${column.value(entry)}, older than ${row === undefined ? newer : `#${row}`}`;
    },
  };
}

/** One short line of what re-ordered a memory's full-text relevance, for the SIGNALS column. */
function describeSignals(entry: RankedMemory): string {
  const { context, signals } = entry.parts;
  const parts: string[] = [];
  const lent = (context?.neighbour?.added ?? 0) + (context?.session?.added ?? 0);
  if (lent > 0) parts.push(`context+${score(lent)}`);
  if (context?.sitting) parts.push(`sitting+${score(context.sitting.added)}`);
  if (signals?.date !== undefined) parts.push(`date×${signals.date}`);
  if (signals?.timeMention !== undefined) parts.push(`when×${signals.timeMention}`);
  if (signals?.secondHop)
    parts.push(
      `hop+${score(signals.secondHop.added)}${signals.secondHop.via.length > 0 ? ` (${signals.secondHop.via.join(', ')})` : ''}`,
    );
  if (signals?.duplicate) parts.push(`dup~${signals.duplicate.similarity.toFixed(2)}`);
  if (signals?.disagrees)
    parts.push(`older~${signals.disagrees.similarity.toFixed(2)} than ${signals.disagrees.newer}`);
  return parts.join(' ');
}
