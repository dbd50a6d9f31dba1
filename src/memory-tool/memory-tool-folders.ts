import type { Memory } from '../memory/memory.js';
import { renderMemoryFile } from '../memory/memory-file.js';
import { assignFileNames, buildMemoryIndex, MEMORY_INDEX_FILE } from '../memory/memory-index.js';
import type { Settings } from '../kernel/settings.js';
import type { Engram } from '../engram.js';
import { fileKey, type MemoryFolder } from './memory-tool-layout.js';
import { humanSize } from './memory-tool-text.js';

/** One memory as a file of its folder. */
export interface MemoryFile {
  fileName: string;
  key: string;
  memory: Memory;
}

/** The files of one folder as they are now: the active memories of its scope, named as the Markdown export names them. */
export interface FolderContents {
  folder: MemoryFolder;
  memories: Memory[];
  /** Sorted by file name. */
  files: MemoryFile[];
  fileNames: Map<string, string>;
}

/** Reads a folder: the scope's active memories (not archived, not invalidated) with their file names. */
export async function readFolder(engram: Engram, folder: MemoryFolder): Promise<FolderContents> {
  const memories = await engram.list({ scopes: [folder.scope] });
  const fileNames = assignFileNames(memories);
  const files = memories
    .map((memory) => {
      const fileName = fileNames.get(memory.id)!;
      return { fileName, key: fileKey(fileName), memory };
    })
    .sort((a, b) => compareText(a.fileName, b.fileName));
  return { folder, memories, files, fileNames };
}

/** The file a key names in a folder, if any. */
export function findFile(contents: FolderContents, key: string): MemoryFile | undefined {
  return contents.files.find((file) => file.key === key);
}

/** The folder's MEMORY.md: one line per memory, within the index caps of the settings. */
export function folderIndexText(contents: FolderContents, settings: Settings): string {
  return buildMemoryIndex(contents.memories, {
    fileNames: contents.fileNames,
    maxLines: settings.index.maxLines,
    maxBytes: settings.index.maxBytes,
    entryMaxChars: settings.index.entryMaxChars,
  }).text;
}

/** One line of a listing: a size and a path. */
export interface ListingEntry {
  bytes: number;
  path: string;
}

/**
 * The listing of a folder, `du`-style: the folder itself with the total size, then MEMORY.md and
 * each file, then (for the root) each subfolder with its files: two levels, as the protocol lists.
 */
export function listFolders(
  root: FolderContents,
  subfolders: readonly FolderContents[],
  settings: Settings,
): ListingEntry[] {
  const entriesOf = (contents: FolderContents): { total: number; entries: ListingEntry[] } => {
    const index = Buffer.byteLength(folderIndexText(contents, settings), 'utf8');
    const entries: ListingEntry[] = [{ bytes: index, path: `${contents.folder.path}/${MEMORY_INDEX_FILE}` }];
    for (const file of contents.files) {
      entries.push({
        bytes: Buffer.byteLength(renderMemoryFile(file.memory), 'utf8'),
        path: `${contents.folder.path}/${file.fileName}`,
      });
    }
    return { total: entries.reduce((sum, entry) => sum + entry.bytes, 0), entries };
  };
  const top = entriesOf(root);
  const children: Array<{ name: string; entries: ListingEntry[] }> = top.entries.map((entry) => ({
    name: entry.path,
    entries: [entry],
  }));
  let total = top.total;
  for (const contents of subfolders) {
    const sub = entriesOf(contents);
    total += sub.total;
    children.push({
      name: `${contents.folder.path}/`,
      entries: [{ bytes: sub.total, path: `${contents.folder.path}/` }, ...sub.entries],
    });
  }
  children.sort((a, b) => compareText(a.name, b.name));
  return [{ bytes: total, path: root.folder.path }, ...children.flatMap((child) => child.entries)];
}

/** Listing lines cut to `maxChars` at a line boundary, with a note saying how many entries were left out. */
export function formatListing(header: string, entries: readonly ListingEntry[], maxChars: number): string {
  let text = header;
  let shown = 0;
  for (const entry of entries) {
    const line = `\n${humanSize(entry.bytes)}\t${entry.path}`;
    if (text.length + line.length > maxChars) break;
    text += line;
    shown += 1;
  }
  if (shown < entries.length)
    text += `\n[Listing cut at ${maxChars} characters: ${shown} of ${entries.length} entries shown. View a folder on its own to see more.]`;
  return text;
}

// Code-unit order, so listings do not change with the machine's locale.
function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
