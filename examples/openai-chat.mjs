// One question to an OpenAI (or OpenAI-compatible) model with long-term memory.
//   OPENAI_API_KEY=… node examples/openai-chat.mjs "Where do we deploy the API?"
// OPENAI_BASE_URL points the client at another server (Ollama, vLLM, the tests' loopback server).
import OpenAI from 'openai';
import { withMemory } from 'engram/node';

const client = withMemory(new OpenAI(), {
  onEvent: (event) => {
    if (event.type === 'memory-injected') console.error(`engram: ${event.ids.length} memories injected`);
  },
});
const question = process.argv[2] ?? 'What do you remember about this project?';
const completion = await client.chat.completions.create({
  model: process.env.EXAMPLE_MODEL ?? 'gpt-5.4',
  messages: [{ role: 'user', content: question }],
});
console.log(completion.choices[0]?.message.content ?? '');
await client.memory.close();
