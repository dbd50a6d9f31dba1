import {
  CallToolRequestSchema,
  ErrorCode,
  InitializeRequestSchema,
  JSONRPCMessageSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  PingRequestSchema,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import type { RequestId } from './mcp-stdio-lines.js';

// The SDK parses a request's params inside the method's handler and answers a ZodError with -32603
// (Internal error); over HTTP it refuses a message whose params are not an object as a whole-body
// parse error. Both transports check each message here first, so params that do not fit the
// method are -32602 (Invalid params) with the request's id, on stdio and on HTTP alike.

/** Params schemas of the methods the server answers, so a bad shape is -32602 Invalid params. */
const REQUEST_SCHEMAS = {
  initialize: InitializeRequestSchema,
  ping: PingRequestSchema,
  'tools/list': ListToolsRequestSchema,
  'tools/call': CallToolRequestSchema,
  'resources/list': ListResourcesRequestSchema,
  'resources/templates/list': ListResourceTemplatesRequestSchema,
  'resources/read': ReadResourceRequestSchema,
} as const;

/** A JSON-RPC error to answer instead of handing the message to the SDK. */
export interface McpRequestProblem {
  id: RequestId;
  code: number;
  message: string;
}

/** What is wrong with one parsed JSON-RPC message, as the error to answer; undefined when the SDK can take it. */
export function checkMcpMessage(message: unknown): McpRequestProblem | undefined {
  const id = requestId(message);
  const record = typeof message === 'object' && message !== null ? (message as Record<string, unknown>) : undefined;
  const method = typeof record?.method === 'string' ? record.method : undefined;
  const schema =
    method !== undefined && Object.hasOwn(REQUEST_SCHEMAS, method)
      ? REQUEST_SCHEMAS[method as keyof typeof REQUEST_SCHEMAS]
      : undefined;
  if (schema && id !== null && record && 'params' in record) {
    const checked = schema.safeParse(message);
    if (!checked.success) {
      const problems = checked.error.issues
        .slice(0, 5)
        .map((issue) => `${issue.path.join('.') || 'params'}: ${issue.message}`);
      return { id, code: ErrorCode.InvalidParams, message: `Invalid params for ${method}: ${problems.join('; ')}.` };
    }
  }
  if (!JSONRPCMessageSchema.safeParse(message).success) {
    return { id, code: ErrorCode.InvalidRequest, message: 'Invalid request: not a JSON-RPC 2.0 message.' };
  }
  if (schema && id !== null) {
    const checked = schema.safeParse(message);
    if (!checked.success)
      return { id, code: ErrorCode.InvalidParams, message: `Invalid params for ${method}: params must be an object.` };
  }
  return undefined;
}

function requestId(message: unknown): RequestId {
  if (typeof message !== 'object' || message === null) return null;
  const id = (message as { id?: unknown }).id;
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : null;
}
