// The shape of the recorded answers, apart from the code that records them
// (memory-mcp-snapshot-maker.ts), the recording (memory-mcp-snapshot-data.ts) and the code that
// serves them (memory-mcp-snapshot.ts).

/** What the real server answers before any tool runs, with SNAPSHOT_SCOPE (memory-mcp-snapshot.ts) where its scope goes. */
export interface MemoryMcpSnapshot {
  protocolVersions: string[];
  latestProtocolVersion: string;
  initialize: { capabilities: Record<string, unknown>; serverInfo: Record<string, unknown>; instructions?: string };
  /** Results of the list requests, whole (they take no arguments the server reads). */
  lists: Record<'tools/list' | 'resources/list' | 'resources/templates/list', Record<string, unknown>>;
  /** The request methods the server handles; any other request is answered Method not found. */
  methods: string[];
}
