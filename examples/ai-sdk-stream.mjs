// streamText of the Vercel AI SDK (v6) with memory, through engram's middleware.
// Needs `ai` and `@ai-sdk/openai`; OPENAI_BASE_URL points the provider at another server.
//   OPENAI_API_KEY=… node examples/ai-sdk-stream.mjs "Where do we deploy the API?"
import { streamText, wrapLanguageModel } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { engramMiddleware } from 'engram/ai-sdk';

const openai = createOpenAI({ ...(process.env.OPENAI_BASE_URL && { baseURL: process.env.OPENAI_BASE_URL }) });
const middleware = engramMiddleware();
const model = wrapLanguageModel({ model: openai.chat(process.env.EXAMPLE_MODEL ?? 'gpt-5.4'), middleware });

const result = streamText({ model, prompt: process.argv[2] ?? 'What do you remember about this project?' });
for await (const text of result.textStream) process.stdout.write(text);
process.stdout.write('\n');
await middleware.memory.close();
