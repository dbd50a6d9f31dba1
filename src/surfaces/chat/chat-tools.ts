import { chmod, lstat, mkdir, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { writeFileAtomically } from '../../kernel/node/atomic-write.js';
import { EngramError } from '../../kernel/errors.js';
import type { Settings } from '../../kernel/settings.js';
import { listDirectoryTool, readFileTool } from '../../sandbox/node/sandbox-files.js';
import { sandboxDenied } from '../../sandbox/sandbox-denied.js';
import { checkProjectPath, type SandboxRoot } from '../../sandbox/node/sandbox-paths.js';
import { searchFilesTool } from '../../sandbox/node/sandbox-search.js';
import { sandboxToolDefinition } from '../../sandbox/node/sandbox.js';
import { FILE_UNCHANGED_MARKER, type FileReadCache } from '../../session/file-read-cache.js';
import type { SessionTool } from '../../contracts/session-tool.js';

/** What the chat tools need: the project they are confined to, the session's read cache, and a way to ask the user. */
export interface ChatToolsOptions {
  /** The project root (resolved once: `resolveSandboxRoot`). */
  root: SandboxRoot;
  settings: Pick<Settings, 'sandbox' | 'chat' | 'session'>;
  /** The session's file-read dedupe: an unchanged file read again answers a short marker. */
  fileReadCache: FileReadCache;
  /** Asks the user a yes/no question; only `true` lets a write happen. */
  confirm: (question: string) => Promise<boolean>;
  /** Milliseconds clock of the search time budget. */
  now?: () => number;
}

// Unicode format characters (bidi overrides and isolates, zero-width joiners, BOM): invisible, or
// reordering what follows, so a path asked about could look like another.
const INVISIBLE_FORMATTING = /\p{Cf}/u;

const PATH_PROPERTY = { type: 'string', description: 'A path relative to the project root, e.g. src/index.ts.' };

/**
 * The reference chat agent's tools, confined to the project by the sandbox's path rules (no `..`,
 * no absolute path outside, no symlink escape, no secret files): read_file (numbered lines, with
 * file-read dedupe), list_files, search_files, and write_file, which writes only after the user
 * says yes. Refusals are thrown as EngramErrors (SANDBOX_DENIED, NOT_FOUND, INVALID_INPUT) and
 * reach the model as error results.
 */
export function createChatTools(options: ChatToolsOptions): SessionTool[] {
  const { root, settings, fileReadCache, confirm } = options;
  const limits = settings.sandbox;
  const now = options.now ?? Date.now;
  return [
    {
      definition: {
        ...sandboxToolDefinition('read_file'),
        description:
          'Read a text file of the project, lines numbered. Paths are relative to the project root. Reading a file again that has not changed answers a short "unchanged" note: the earlier result still holds.',
      },
      async run(input) {
        const checked = await checkProjectPath(root, input.path, { maxLength: limits.maxPathLength });
        if (!checked.exists)
          throw new EngramError(
            'NOT_FOUND',
            `No file ${checked.shown} in the project; list_files shows what is there.`,
          );
        const info = await stat(checked.absolute);
        // A range is its own entry: reading lines 1-50 says nothing about lines 51-100.
        const key = `${checked.absolute}#${String(input.offset ?? 1)}:${String(input.limit ?? '')}`;
        const fileStat = { mtimeMs: info.mtimeMs, size: info.size };
        // With server-side context editing the provider may clear an earlier result this cache cannot see go.
        const dedupe = settings.session.serverContextEditing !== true;
        if (dedupe && fileReadCache.check(key, fileStat)) return { content: FILE_UNCHANGED_MARKER };
        const content = await readFileTool(root, limits, {
          path: input.path,
          offset: input.offset,
          limit: input.limit,
        });
        // A result over the storage threshold reaches the model as a preview: only content it saw whole is "unchanged" later.
        const bytes = Buffer.byteLength(content);
        if (dedupe && bytes <= settings.session.toolResultThresholdBytes)
          fileReadCache.record(key, { stat: fileStat, bytes });
        return { content, filesRead: [{ path: checked.shown, content }] };
      },
    },
    {
      definition: { ...sandboxToolDefinition('list_directory'), name: 'list_files' },
      async run(input) {
        return { content: await listDirectoryTool(root, limits, { path: input.path }) };
      },
    },
    {
      definition: sandboxToolDefinition('search_files'),
      async run(input) {
        const { pattern, path, regex, ignore_case: ignoreCase, glob } = input;
        return {
          content: await searchFilesTool(root, limits, { pattern, path, regex, ignore_case: ignoreCase, glob }, now),
        };
      },
    },
    {
      definition: {
        name: 'write_file',
        description:
          'Write a text file inside the project (created, or replaced whole). The user is asked to confirm every write; if they decline, nothing is written. Paths are relative to the project root.',
        inputSchema: {
          type: 'object',
          properties: {
            path: PATH_PROPERTY,
            content: { type: 'string', description: 'The complete new content of the file.' },
          },
          required: ['path', 'content'],
          additionalProperties: false,
        },
      },
      async run(input) {
        const content = input.content;
        if (typeof content !== 'string')
          throw new EngramError('INVALID_INPUT', 'content must be the text of the file.');
        const bytes = Buffer.byteLength(content);
        if (bytes > settings.chat.writeMaxBytes) {
          throw new EngramError(
            'PAYLOAD_TOO_LARGE',
            `The content is ${bytes} bytes; write_file writes at most ${settings.chat.writeMaxBytes} (chat.writeMaxBytes).`,
          );
        }
        if (typeof input.path === 'string' && INVISIBLE_FORMATTING.test(input.path)) {
          const found = [...new Set(input.path.match(new RegExp(INVISIBLE_FORMATTING, 'gu')))].map(
            (character) => `U+${character.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`,
          );
          throw sandboxDenied(
            `write_file does not write a path holding invisible formatting characters (${found.join(', ')}): they can make the path the user confirms read as another. Use a plain path.`,
          );
        }
        const checked = await checkProjectPath(root, input.path, { maxLength: limits.maxPathLength });
        if (checked.shown === '.' || checked.shown.split('/').includes('.git')) {
          throw sandboxDenied(
            `write_file does not write ${JSON.stringify(checked.shown)}: the project root and git's own folder are off limits.`,
          );
        }
        const existing = checked.exists ? await lstat(checked.absolute) : undefined;
        if (existing && !existing.isFile())
          throw new EngramError(
            'INVALID_INPUT',
            `${checked.shown} is not a regular file; write_file only writes files.`,
          );
        const question = `Write ${bytes} bytes to ${checked.shown} (${existing ? `replacing ${existing.size} bytes` : 'new file'})?`;
        if (!(await confirm(question))) {
          return {
            content: `The user declined: nothing was written to ${checked.shown}. Ask them what they want instead.`,
            isError: true,
          };
        }
        // Checked again after the question: the folder may have changed while the user read it.
        const again = await checkProjectPath(root, input.path, { maxLength: limits.maxPathLength });
        await mkdir(dirname(again.absolute), { recursive: true });
        await writeFileAtomically(again.absolute, content, 'STORE_ERROR');
        // The atomic write creates 0600 files: keep an existing file's mode, give a new one the usual 0644.
        await chmod(again.absolute, existing ? existing.mode & 0o777 : 0o644);
        // No cache entry to drop: the new mtime and size already make a re-read return the content.
        return { content: `Wrote ${bytes} bytes to ${again.shown}.`, filesEdited: [again.shown] };
      },
    },
  ];
}
