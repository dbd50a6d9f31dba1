// A chat loop on the Claude API with long-term memory: one line of engram (`withMemory`).
// Reads one user message per line from stdin, streams each answer to stdout.
//   ANTHROPIC_API_KEY=… node examples/anthropic-chat.mjs
// ANTHROPIC_BASE_URL points the client elsewhere (the tests use a loopback server); ENGRAM_STORE
// chooses the store (default ~/.engram/engram.db), and the current folder is the project.
import { createInterface } from 'node:readline';
import Anthropic from '@anthropic-ai/sdk';
import { withMemory } from 'engram/node';

const client = withMemory(new Anthropic());
const model = process.env.EXAMPLE_MODEL ?? 'claude-sonnet-5-5';
const messages = [];

for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === '') continue;
  messages.push({ role: 'user', content: line });
  const stream = client.messages.stream({ model, max_tokens: 1024, system: 'You are a concise assistant.', messages });
  stream.on('text', (text) => process.stdout.write(text));
  const answer = await stream.finalMessage();
  process.stdout.write('\n');
  messages.push({ role: 'assistant', content: answer.content });
  // Optional: waits until this turn's memories are written, so the very next line can recall them.
  await client.memory.flush();
}
await client.memory.close();
