// A tool-use loop on the Claude API with memory: the loop is the usual one, unchanged by the wrapper.
// A turn that ends in tool_use is not extracted until the loop's final answer.
//   ANTHROPIC_API_KEY=… node examples/tool-loop.mjs "What is the weather where we deploy?"
import Anthropic from '@anthropic-ai/sdk';
import { withMemory } from 'engram/node';

const client = withMemory(new Anthropic());
const tools = [
  {
    name: 'get_weather',
    description: 'The current weather of a city',
    input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
];
const runTool = (name, input) => (name === 'get_weather' ? `Sunny, 21°C in ${input.city}` : `Unknown tool ${name}`);

const messages = [{ role: 'user', content: process.argv[2] ?? 'What is the weather where we deploy?' }];
for (let round = 0; round < 5; round += 1) {
  const message = await client.messages.create({
    model: process.env.EXAMPLE_MODEL ?? 'claude-sonnet-5-5',
    max_tokens: 1024,
    tools,
    messages,
  });
  messages.push({ role: 'assistant', content: message.content });
  if (message.stop_reason !== 'tool_use') {
    console.log(message.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join(''));
    break;
  }
  const results = message.content
    .filter((block) => block.type === 'tool_use')
    .map((block) => ({ type: 'tool_result', tool_use_id: block.id, content: runTool(block.name, block.input) }));
  console.log(`(ran ${results.length} tool call${results.length === 1 ? '' : 's'})`);
  messages.push({ role: 'user', content: results });
}
await client.memory.close();
