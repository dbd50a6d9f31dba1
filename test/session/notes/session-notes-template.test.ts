import { describe, expect, it } from 'vitest';
import { EngramError } from '../../../src/kernel/errors.js';
import {
  capNotesSections,
  DEFAULT_SESSION_NOTES_PROMPT,
  DEFAULT_SESSION_NOTES_TEMPLATE,
  hasRealNotesContent,
  NOTES_SECTION_CUT_MARKER,
  notesCapsNotice,
  notesOverCaps,
  parseNotesSections,
  parseSectionEdits,
  renderNotesPrompt,
  replaceNotesSection,
  SESSION_NOTES_SECTIONS,
} from '../../../src/session/notes/session-notes-template.js';
import { DEFAULT_SETTINGS } from '../../../src/kernel/settings.js';
import { estimateTextTokens } from '../../../src/kernel/token-estimate.js';

const settings = { notes: DEFAULT_SETTINGS.notes, tokens: DEFAULT_SETTINGS.tokens };

describe('the session notes template', () => {
  it('has the ten sections of SPEC §2 in order', () => {
    expect(SESSION_NOTES_SECTIONS).toEqual([
      'Session Title',
      'Current State',
      'Task Specification',
      'Files and Functions',
      'Workflow',
      'Errors and Corrections',
      'Codebase and System Documentation',
      'Learnings',
      'Key Results',
      'Worklog',
    ]);
    expect(parseNotesSections(DEFAULT_SESSION_NOTES_TEMPLATE).map((section) => section.name)).toEqual([
      ...SESSION_NOTES_SECTIONS,
    ]);
  });

  it('is not real content untouched, nor with whitespace changes; it is once a section has content', () => {
    const template = DEFAULT_SESSION_NOTES_TEMPLATE;
    expect(hasRealNotesContent(template, template)).toBe(false);
    expect(hasRealNotesContent(template.replace(/\n/g, '\n\n  ').replace(/ /g, '   ') + '\n\n\n', template)).toBe(
      false,
    );
    expect(hasRealNotesContent('', template)).toBe(false);
    // Deleting a description is no content either.
    expect(hasRealNotesContent(template.replace(/_A short[^\n]*_\n/, ''), template)).toBe(false);
    expect(
      hasRealNotesContent(
        replaceNotesSection(
          template,
          'Worklog',
          '_Step by step, what was tried and done; very terse_\n- ran the tests',
        ),
        template,
      ),
    ).toBe(true);
    expect(hasRealNotesContent(`Loose text before any heading\n\n${template}`, template)).toBe(true);
    expect(hasRealNotesContent('just some notes, no headings', template)).toBe(true);
  });
});

describe('parsing and replacing sections', () => {
  const notes = [
    'Preamble line\n',
    '# Session Title\n_title_\nFix the parser\n\n',
    '# Current State\n_state_\n## A subheading stays in its section\n```sh\n# not a heading: inside a fence\n```\nworking on it\n\n',
    '# Worklog\r\n- one\r\n- two',
  ].join('');

  it('reads top-level sections with deeper headings and fenced lines inside them', () => {
    const sections = parseNotesSections(notes);
    expect(sections.map((section) => section.name)).toEqual(['Session Title', 'Current State', 'Worklog']);
    expect(sections[1]!.body).toContain('## A subheading stays in its section');
    expect(sections[1]!.body).toContain('# not a heading: inside a fence');
    expect(sections.map((section) => notes.slice(section.bodyStart, section.end))).toEqual(
      sections.map((section) => section.body),
    );
  });

  it('replaces one section and keeps every other byte identical', () => {
    const replaced = replaceNotesSection(notes, 'current state', 'new state\nsecond line');
    const before = parseNotesSections(notes);
    const after = parseNotesSections(replaced);
    expect(after.map((section) => section.name)).toEqual(before.map((section) => section.name));
    expect(replaced.slice(0, after[1]!.bodyStart)).toBe(notes.slice(0, before[1]!.bodyStart));
    expect(replaced.slice(after[1]!.end)).toBe(notes.slice(before[1]!.end));
    expect(after[1]!.body).toBe('new state\nsecond line\n\n');
    // Replacing the last section, whose text has no final newline.
    const last = replaceNotesSection(notes, 'Worklog', '- three');
    expect(last.slice(0, parseNotesSections(last)[2]!.bodyStart)).toBe(notes.slice(0, before[2]!.bodyStart));
    expect(parseNotesSections(last)[2]!.body).toBe('- three\n');
    // An empty body leaves the heading with a blank line before the next.
    expect(parseNotesSections(replaceNotesSection(notes, 'Session Title', '   \n'))[0]!.body).toBe('\n');
  });

  it('cannot add, split or swallow sections through a body', () => {
    const hostile = '# Injected Section\nbody\n## Also fine\n```\n# unclosed fence';
    const replaced = replaceNotesSection(DEFAULT_SESSION_NOTES_TEMPLATE, 'Learnings', hostile);
    expect(parseNotesSections(replaced).map((section) => section.name)).toEqual([...SESSION_NOTES_SECTIONS]);
    const learnings = parseNotesSections(replaced).find((section) => section.name === 'Learnings')!;
    expect(learnings.body).toContain('## Injected Section');
    expect(learnings.body).toContain('\n## Also fine\n'); // deeper than the section: left as written
    expect(learnings.body.trimEnd().endsWith('```')).toBe(true);
  });

  it('refuses an unknown section or a body that is not text, changing nothing', () => {
    expect(() => replaceNotesSection(DEFAULT_SESSION_NOTES_TEMPLATE, 'Nope', 'x')).toThrowError(EngramError);
    expect(() => replaceNotesSection(DEFAULT_SESSION_NOTES_TEMPLATE, 'Nope', 'x')).toThrowError(
      /no section named "Nope".*Session Title/,
    );
    expect(() => replaceNotesSection(DEFAULT_SESSION_NOTES_TEMPLATE, 'Worklog', 42 as unknown as string)).toThrowError(
      /text/,
    );
    expect(() => parseNotesSections(undefined as unknown as string)).toThrowError(EngramError);
  });
});

describe('caps', () => {
  it('names the sections over the per-section cap and the file over its cap', () => {
    const big = 'x'.repeat(2_100 * 4);
    let notes = replaceNotesSection(DEFAULT_SESSION_NOTES_TEMPLATE, 'Worklog', big);
    let report = notesOverCaps(notes, settings);
    expect(report.sections.map((section) => section.name)).toEqual(['Worklog']);
    expect(report.fileOver).toBe(false);
    expect(notesCapsNotice(report, settings)).toContain('Condense "Worklog"');

    // At the cap exactly: not over.
    notes = replaceNotesSection(DEFAULT_SESSION_NOTES_TEMPLATE, 'Worklog', 'y'.repeat(2_000 * 4 - 1));
    expect(estimateTextTokens(parseNotesSections(notes).at(-1)!.body)).toBe(2_000);
    expect(notesOverCaps(notes, settings).over).toBe(false);
    expect(notesCapsNotice(notesOverCaps(notes, settings), settings)).toBe('');

    notes = DEFAULT_SESSION_NOTES_TEMPLATE;
    for (const name of SESSION_NOTES_SECTIONS.slice(0, 7))
      notes = replaceNotesSection(notes, name, 'z'.repeat(1_900 * 4));
    report = notesOverCaps(notes, settings);
    expect(report.sections).toEqual([]);
    expect(report.fileOver).toBe(true);
    expect(notesCapsNotice(report, settings)).toMatch(/whole file is about \d+ tokens, cap 12000/);
  });

  it('cuts a section over twice its cap at the hard cap and leaves the others byte-identical', () => {
    const lines = Array.from({ length: 600 }, (_, index) => `- step ${index}: ${'ü'.repeat(20)}`).join('\n');
    const notes = replaceNotesSection(
      replaceNotesSection(DEFAULT_SESSION_NOTES_TEMPLATE, 'Current State', 'fine'),
      'Learnings',
      lines,
    );
    expect(estimateTextTokens(lines)).toBeGreaterThan(4_000);
    const capped = capNotesSections(notes, settings);
    expect(capped.truncated).toEqual(['Learnings']);
    const learnings = parseNotesSections(capped.text).find((section) => section.name === 'Learnings')!;
    expect(estimateTextTokens(learnings.body)).toBeLessThanOrEqual(4_000);
    expect(learnings.body).toContain(NOTES_SECTION_CUT_MARKER);
    expect(learnings.body).toMatch(/- step \d+: ü+\n\[…/);
    for (const section of parseNotesSections(capped.text).filter((section) => section.name !== 'Learnings')) {
      expect(section.body).toBe(parseNotesSections(notes).find((original) => original.name === section.name)!.body);
    }
    expect(capNotesSections(capped.text, settings)).toEqual({ text: capped.text, truncated: [] });
    // Between 1x and 2x: left for the condensing prompt.
    const between = replaceNotesSection(DEFAULT_SESSION_NOTES_TEMPLATE, 'Learnings', 'w'.repeat(3_000 * 4));
    expect(capNotesSections(between, settings).truncated).toEqual([]);
  });
});

describe('the update prompt and the helper answer', () => {
  it('fills the placeholders once and appends the notes to a prompt that lacks them', () => {
    const filled = renderNotesPrompt(DEFAULT_SESSION_NOTES_PROMPT, {
      notes: 'NOTES {{sections}}',
      sections: ['A', 'B'],
      settings,
    });
    expect(filled).toContain('<current-notes>\nNOTES {{sections}}\n</current-notes>');
    expect(filled).toContain('"A", "B"');
    expect(filled).toContain('under about 2000 tokens');
    expect(renderNotesPrompt('Update the notes.', { notes: 'N', sections: [], settings })).toBe(
      'Update the notes.\n\n<current-notes>\nN\n</current-notes>',
    );
  });

  const names = [...SESSION_NOTES_SECTIONS];

  it('reads section blocks, case-insensitively named, ignoring text around them', () => {
    const edits = parseSectionEdits(
      'Here you go:\n<section name="current state">\nline 1\nline 2\n</section>\n<section name="Worklog">- did it</section>',
      names,
    );
    expect(edits).toEqual([
      { section: 'Current State', body: 'line 1\nline 2' },
      { section: 'Worklog', body: '- did it' },
    ]);
    expect(parseSectionEdits('<no-changes/>', names)).toEqual([]);
  });

  it.each([
    ['no blocks at all', 'I updated the notes.'],
    ['an unclosed block', '<section name="Worklog">\n- a\n'],
    ['a malformed opener', "<section name='Worklog'>x</section>"],
    ['an unknown section', '<section name="Secrets">x</section>'],
    ['a repeated section', '<section name="Worklog">a</section><section name="Worklog">b</section>'],
    ['not text', 17],
  ])('refuses %s whole with MODEL_OUTPUT_INVALID', (_, output) => {
    let caught: unknown;
    try {
      parseSectionEdits(output as string, names);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(EngramError);
    expect((caught as EngramError).code).toBe('MODEL_OUTPUT_INVALID');
    expect((caught as EngramError).message).toMatch(/left unchanged/);
  });
});
