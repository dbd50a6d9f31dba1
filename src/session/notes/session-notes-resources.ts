import { resolve } from 'node:path';
import { EngramError } from '../../kernel/errors.js';
import type { Settings } from '../../kernel/settings.js';
import {
  DEFAULT_SESSION_NOTES_PROMPT,
  DEFAULT_SESSION_NOTES_TEMPLATE,
  parseNotesSections,
} from './session-notes-template.js';

/**
 * The file access the notes need, injected so this module stays pure: `nodeNotesFiles`
 * (src/session/node/session-notes-files.ts) on Node.
 */
export interface NotesFiles {
  /**
   * A UTF-8 file of at most `maxBytes`, or undefined when there is none; failures are EngramErrors
   * with `code` (default STORE_ERROR) whose message names the file by `label` (e.g. "The session notes").
   */
  read(
    path: string,
    options: { maxBytes: number; label: string; code?: 'STORE_ERROR' | 'CONFIG_INVALID' },
  ): Promise<string | undefined>;
  /** Replaces the file whole and atomically, making its folder (0700) first. */
  write(path: string, text: string): Promise<void>;
}

/** The notes' template (its sections) and the helper's update instructions. */
export interface NotesResources {
  template: string;
  prompt: string;
}

/** Where the template and prompt come from: given, else the files `notes.templatePath` and `notes.promptPath` name. */
export interface SessionNotesResourceOptions {
  files: NotesFiles;
  settings: Pick<Settings, 'notes'>;
  template?: string;
  prompt?: string;
}

/** The template and prompt: given, else from the files the settings name, else the defaults. */
export async function loadNotesResources(options: SessionNotesResourceOptions): Promise<NotesResources> {
  const { notes } = options.settings;
  let template = options.template;
  if (template === undefined && notes.templatePath) {
    template = await readSetting(options.files, notes.templatePath, 'notes.templatePath', notes.maxFileBytes);
    checkTemplate(template, `The notes template ${notes.templatePath} (notes.templatePath)`);
  }
  let prompt = options.prompt;
  if (prompt === undefined && notes.promptPath) {
    prompt = await readSetting(options.files, notes.promptPath, 'notes.promptPath', notes.maxFileBytes);
    checkPrompt(prompt, `The notes prompt ${notes.promptPath} (notes.promptPath)`);
  }
  return { template: template ?? DEFAULT_SESSION_NOTES_TEMPLATE, prompt: prompt ?? DEFAULT_SESSION_NOTES_PROMPT };
}

export function checkTemplate(template: unknown, what: string): void {
  if (typeof template !== 'string' || parseNotesSections(template).length === 0) {
    throw new EngramError(
      'CONFIG_INVALID',
      `${what} has no sections: write one Markdown heading per section ("# Current State"), or leave notes.templatePath empty for the default.`,
    );
  }
}

export function checkPrompt(prompt: unknown, what: string): void {
  if (typeof prompt !== 'string' || prompt.trim() === '')
    throw new EngramError(
      'CONFIG_INVALID',
      `${what} is empty: write the update instructions, or leave notes.promptPath empty for the default.`,
    );
}

async function readSetting(files: NotesFiles, path: string, setting: string, maxBytes: number): Promise<string> {
  const text = await files.read(resolve(path), {
    maxBytes,
    label: `The file ${setting} names`,
    code: 'CONFIG_INVALID',
  });
  if (text === undefined)
    throw new EngramError(
      'CONFIG_INVALID',
      `${setting} names ${path}, which does not exist; fix the path or set it to '' for the default.`,
    );
  return text;
}
