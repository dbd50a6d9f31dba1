// The AI SDK entry, `engram/ai-sdk`: memory as a Vercel AI SDK middleware for `wrapLanguageModel`.
// `ai` (v6) is an optional peer dependency: this entry needs it only for its types.
// test/exports.test.ts pins this list: a change to it is a deliberate diff.
// Its options and events are withMemory's: `WithMemoryOptions`, `WithMemoryEvent` in engram/node.
export { engramMiddleware, type EngramMiddleware, type EngramMiddlewareOptions } from './ai-sdk-middleware.js';
