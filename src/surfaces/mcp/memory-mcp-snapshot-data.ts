// Written by scripts/write-mcp-snapshot.ts from the real server: do not edit by hand.
import type { MemoryMcpSnapshot } from './memory-mcp-snapshot-types.js';

export const MEMORY_MCP_SNAPSHOT: MemoryMcpSnapshot = {
  protocolVersions: ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05', '2024-10-07'],
  latestProtocolVersion: '2025-11-25',
  initialize: {
    capabilities: {
      tools: {
        listChanged: true,
      },
      resources: {
        listChanged: true,
      },
    },
    serverInfo: {
      name: 'engram',
      version: '0.0.0',
    },
    instructions:
      'Long-term memory shared across sessions. Search it (memory_search) before answering questions about the user, their preferences or this project; save (memory_save) facts that will matter in future sessions. Scopes available: "project:engram-mcp-snapshot-scope", "global".',
  },
  lists: {
    'tools/list': {
      tools: [
        {
          name: 'memory_save',
          title: 'Save a memory',
          description:
            'Save one self-contained fact that should change future behaviour, written so it reads on its own ("The user\'s database is PostgreSQL 15", not "it uses PG"). Types: user (who the user is, preferences), feedback (corrections and confirmed ways of working; say Why and How to apply), project (facts and decisions not visible in the code), reference (where things live outside the code), procedure (a reusable how-to). Never save secrets, code patterns, git history or in-progress task state. A fact that nearly repeats a saved one updates that memory instead of adding another. Scope defaults to "project:engram-mcp-snapshot-scope"; allowed: "project:engram-mcp-snapshot-scope", "global".',
          inputSchema: {
            $schema: 'http://json-schema.org/draft-07/schema#',
            type: 'object',
            properties: {
              content: {
                type: 'string',
                minLength: 1,
                description: 'The fact, in Markdown. One fact per memory.',
              },
              type: {
                description: 'Kind of memory; default "project".',
                type: 'string',
                enum: ['user', 'feedback', 'project', 'reference', 'procedure'],
              },
              name: {
                description: 'Short lowercase slug, e.g. "database-version"; derived from the content when left out.',
                type: 'string',
                maxLength: 200,
              },
              description: {
                description: 'One line saying what this memory is about; derived when left out.',
                type: 'string',
                maxLength: 1000,
              },
              importance: {
                description: '0..1, default 0.5; higher is recalled first and kept longer.',
                type: 'number',
                minimum: 0,
                maximum: 1,
              },
              scope: {
                description: 'Where the memory lives; one of "project:engram-mcp-snapshot-scope", "global".',
                type: 'string',
                maxLength: 400,
              },
            },
            required: ['content'],
          },
          annotations: {
            readOnlyHint: false,
            destructiveHint: false,
            idempotentHint: false,
            openWorldHint: false,
          },
          execution: {
            taskSupport: 'forbidden',
          },
        },
        {
          name: 'memory_search',
          title: 'Search memories',
          description:
            'Find the memories most relevant to a natural-language question, best first, each with its score (relevance × recency × importance). Ask plainly, e.g. "which database does the project use?". Searches all of "project:engram-mcp-snapshot-scope", "global" unless a scope is given. Archived and invalidated memories are left out.',
          inputSchema: {
            $schema: 'http://json-schema.org/draft-07/schema#',
            type: 'object',
            properties: {
              query: {
                type: 'string',
                minLength: 1,
                maxLength: 10000,
                description: 'A question or keywords.',
              },
              topK: {
                description: 'How many memories to return at most; default 8 (setting recall.topK).',
                type: 'integer',
                minimum: 1,
                maximum: 50,
              },
              scope: {
                description: 'Search only this scope; one of "project:engram-mcp-snapshot-scope", "global".',
                type: 'string',
                maxLength: 400,
              },
              types: {
                description: 'Only memories of these types.',
                minItems: 1,
                type: 'array',
                items: {
                  type: 'string',
                  enum: ['user', 'feedback', 'project', 'reference', 'procedure'],
                },
              },
              asOf: {
                description: 'What was true then: memories valid at this ISO date, invalidated ones included.',
                type: 'string',
                maxLength: 40,
              },
              includeInvalid: {
                description: 'Also invalidated and superseded memories.',
                type: 'boolean',
              },
            },
            required: ['query'],
          },
          annotations: {
            readOnlyHint: true,
            openWorldHint: false,
          },
          execution: {
            taskSupport: 'forbidden',
          },
        },
        {
          name: 'memory_get',
          title: 'Read a memory',
          description: 'Read one memory in full by its id: content, type, scope, importance, validity and dates.',
          inputSchema: {
            $schema: 'http://json-schema.org/draft-07/schema#',
            type: 'object',
            properties: {
              id: {
                type: 'string',
                minLength: 1,
                maxLength: 200,
                description: 'The memory id, as returned by memory_save, memory_search or memory_list.',
              },
            },
            required: ['id'],
          },
          annotations: {
            readOnlyHint: true,
            openWorldHint: false,
          },
          execution: {
            taskSupport: 'forbidden',
          },
        },
        {
          name: 'memory_update',
          title: 'Update a memory',
          description:
            'Change fields of an existing memory (give only the fields to change). Prefer this over saving a near-duplicate when a fact was refined or corrected. The previous version stays in history and can be undone.',
          inputSchema: {
            $schema: 'http://json-schema.org/draft-07/schema#',
            type: 'object',
            properties: {
              id: {
                type: 'string',
                minLength: 1,
                maxLength: 200,
                description: 'The memory id, as returned by memory_save, memory_search or memory_list.',
              },
              content: {
                description: 'New content (replaces the old content).',
                type: 'string',
                minLength: 1,
              },
              type: {
                type: 'string',
                enum: ['user', 'feedback', 'project', 'reference', 'procedure'],
              },
              name: {
                description: 'New slug name.',
                type: 'string',
                maxLength: 200,
              },
              description: {
                description: 'New one-line description.',
                type: 'string',
                maxLength: 1000,
              },
              importance: {
                description: 'New importance, 0..1.',
                type: 'number',
                minimum: 0,
                maximum: 1,
              },
            },
            required: ['id'],
          },
          annotations: {
            readOnlyHint: false,
            destructiveHint: false,
            idempotentHint: true,
            openWorldHint: false,
          },
          execution: {
            taskSupport: 'forbidden',
          },
        },
        {
          name: 'memory_forget',
          title: 'Forget a memory',
          description:
            'Forget a memory that is wrong or no longer useful. By default it is archived: kept, but left out of search and lists. With hard: true it is deleted for good; use that only when the user asks. With purge: true it is deleted with its history, the jobs and records that quote it, and the files are vacuumed (for a secret the user wants erased); the answer lists any place a copy may remain. It cannot be undone.',
          inputSchema: {
            $schema: 'http://json-schema.org/draft-07/schema#',
            type: 'object',
            properties: {
              id: {
                type: 'string',
                minLength: 1,
                maxLength: 200,
                description: 'The memory id, as returned by memory_save, memory_search or memory_list.',
              },
              hard: {
                description: 'Delete for good instead of archiving; default false.',
                type: 'boolean',
              },
              purge: {
                description: 'Delete with its history, leaving no copy in the store; cannot be undone. Default false.',
                type: 'boolean',
              },
            },
            required: ['id'],
          },
          annotations: {
            readOnlyHint: false,
            destructiveHint: true,
            idempotentHint: true,
            openWorldHint: false,
          },
          execution: {
            taskSupport: 'forbidden',
          },
        },
        {
          name: 'memory_list',
          title: 'List memories',
          description:
            'List memories newest first (id, type, scope, name, description; use memory_get for the content). Lists all of "project:engram-mcp-snapshot-scope", "global" unless a scope is given.',
          inputSchema: {
            $schema: 'http://json-schema.org/draft-07/schema#',
            type: 'object',
            properties: {
              type: {
                description: 'Only memories of this type.',
                type: 'string',
                enum: ['user', 'feedback', 'project', 'reference', 'procedure'],
              },
              scope: {
                description: 'Only this scope; one of "project:engram-mcp-snapshot-scope", "global".',
                type: 'string',
                maxLength: 400,
              },
              archived: {
                description: 'Archived memories: exclude (default), include or only.',
                type: 'string',
                enum: ['exclude', 'include', 'only'],
              },
              limit: {
                description: 'At most this many; default 50.',
                type: 'integer',
                minimum: 1,
                maximum: 200,
              },
              offset: {
                description: 'Skip this many (for paging).',
                type: 'integer',
                minimum: 0,
                maximum: 9007199254740991,
              },
            },
          },
          annotations: {
            readOnlyHint: true,
            openWorldHint: false,
          },
          execution: {
            taskSupport: 'forbidden',
          },
        },
        {
          name: 'memory_file_view',
          title: 'View memory files',
          description:
            "The memories as Markdown files with YAML frontmatter (Anthropic memory tool protocol). View /memories first: a folder gives a listing two levels deep with sizes; a file gives its lines numbered. view_range [start, end] reads part of a file (end -1 = to the end). In the memory tool, /memories/<name>.md holds memories of scope project:engram-mcp-snapshot-scope; /memories/global/<name>.md holds memories of scope global. Each folder's MEMORY.md is a generated, read-only index; delete forgets a memory (it stays in history); rename keeps a memory in its folder.",
          inputSchema: {
            $schema: 'http://json-schema.org/draft-07/schema#',
            type: 'object',
            properties: {
              path: {
                type: 'string',
                description:
                  'A path under /memories, e.g. /memories/user-preferences.md or /memories/global/commit-style.md.',
              },
              view_range: {
                description: 'For a file: [first line, last line], 1-based; last -1 reads to the end.',
                type: 'array',
                items: {
                  type: 'number',
                },
              },
            },
            required: ['path'],
          },
          annotations: {
            readOnlyHint: true,
            openWorldHint: false,
          },
          execution: {
            taskSupport: 'forbidden',
          },
        },
        {
          name: 'memory_file_create',
          title: 'Create a memory file',
          description:
            'Create (or overwrite) one memory as a file: the file name is its name; the text is the memory, optionally after frontmatter with description, metadata.type (user, feedback, project, reference, procedure) and metadata.importance (0..1). One self-contained fact per file; never secrets. A text that nearly repeats an existing memory of the folder updates that memory instead.',
          inputSchema: {
            $schema: 'http://json-schema.org/draft-07/schema#',
            type: 'object',
            properties: {
              path: {
                type: 'string',
                description:
                  'A path under /memories, e.g. /memories/user-preferences.md or /memories/global/commit-style.md.',
              },
              file_text: {
                type: 'string',
                description: 'The whole file: optional frontmatter, then the memory in Markdown.',
              },
            },
            required: ['path', 'file_text'],
          },
          annotations: {
            readOnlyHint: false,
            destructiveHint: false,
            idempotentHint: true,
            openWorldHint: false,
          },
          execution: {
            taskSupport: 'forbidden',
          },
        },
        {
          name: 'memory_file_str_replace',
          title: 'Edit a memory file',
          description:
            'Replace text that occurs exactly once in a memory file (frontmatter included: description, metadata.type, metadata.importance and the body may change). Omit new_str to delete old_str. The previous version stays in history.',
          inputSchema: {
            $schema: 'http://json-schema.org/draft-07/schema#',
            type: 'object',
            properties: {
              path: {
                type: 'string',
                description:
                  'A path under /memories, e.g. /memories/user-preferences.md or /memories/global/commit-style.md.',
              },
              old_str: {
                type: 'string',
                description: 'Text that occurs exactly once in the file.',
              },
              new_str: {
                description: 'The replacement; omit to delete old_str.',
                type: 'string',
              },
            },
            required: ['path', 'old_str'],
          },
          annotations: {
            readOnlyHint: false,
            destructiveHint: false,
            idempotentHint: false,
            openWorldHint: false,
          },
          execution: {
            taskSupport: 'forbidden',
          },
        },
        {
          name: 'memory_file_insert',
          title: 'Insert into a memory file',
          description:
            'Insert text after a line of a memory file (numbers as memory_file_view shows them; the frontmatter stays at the top).',
          inputSchema: {
            $schema: 'http://json-schema.org/draft-07/schema#',
            type: 'object',
            properties: {
              path: {
                type: 'string',
                description:
                  'A path under /memories, e.g. /memories/user-preferences.md or /memories/global/commit-style.md.',
              },
              insert_line: {
                type: 'number',
                description: 'The line after which to insert (0 = before the first line).',
              },
              insert_text: {
                type: 'string',
                description: 'The text to insert.',
              },
            },
            required: ['path', 'insert_line', 'insert_text'],
          },
          annotations: {
            readOnlyHint: false,
            destructiveHint: false,
            idempotentHint: false,
            openWorldHint: false,
          },
          execution: {
            taskSupport: 'forbidden',
          },
        },
        {
          name: 'memory_file_delete',
          title: 'Delete a memory file',
          description:
            'Forget the memory a file holds: it is archived (kept in history, left out of recall and of these files). Folders and MEMORY.md cannot be deleted.',
          inputSchema: {
            $schema: 'http://json-schema.org/draft-07/schema#',
            type: 'object',
            properties: {
              path: {
                type: 'string',
                description:
                  'A path under /memories, e.g. /memories/user-preferences.md or /memories/global/commit-style.md.',
              },
            },
            required: ['path'],
          },
          annotations: {
            readOnlyHint: false,
            destructiveHint: true,
            idempotentHint: true,
            openWorldHint: false,
          },
          execution: {
            taskSupport: 'forbidden',
          },
        },
        {
          name: 'memory_file_rename',
          title: 'Rename a memory file',
          description:
            'Rename a memory (its file name is its name) within its folder; never overwrites an existing file.',
          inputSchema: {
            $schema: 'http://json-schema.org/draft-07/schema#',
            type: 'object',
            properties: {
              old_path: {
                type: 'string',
                description: 'The file to rename.',
              },
              new_path: {
                type: 'string',
                description: 'Its new path, in the same folder.',
              },
            },
            required: ['old_path', 'new_path'],
          },
          annotations: {
            readOnlyHint: false,
            destructiveHint: false,
            idempotentHint: false,
            openWorldHint: false,
          },
          execution: {
            taskSupport: 'forbidden',
          },
        },
      ],
    },
    'resources/list': {
      resources: [
        {
          uri: 'memory://index',
          name: 'memory-index',
          title: 'MEMORY.md',
          description:
            'The index of active memories in "project:engram-mcp-snapshot-scope", "global": one line per memory (name and description). Read a memory\'s content with memory_search or memory_get.',
          mimeType: 'text/markdown',
        },
      ],
    },
    'resources/templates/list': {
      resourceTemplates: [],
    },
  },
  methods: [
    'initialize',
    'ping',
    'resources/list',
    'resources/templates/list',
    'resources/read',
    'tools/call',
    'tools/list',
  ],
};
