// The library itself: open engram as the CLI does, remember, recall, build what to inject, forget.
//   node examples/facade.mjs
// ENGRAM_STORE chooses the store (default ~/.engram/engram.db); the current folder is the project.
import { openEngram } from 'engram/node';
import { isEngramError } from 'engram';

const opened = await openEngram();
try {
  const { engram } = opened;
  const memory = await engram.remember({
    name: 'test-style',
    description: 'How integration tests are written here',
    content: 'Integration tests use the real database, no mocks.',
    type: 'feedback',
  });
  const { memories } = await engram.recall('how should I write the integration tests?');
  console.log(`recalled: ${memories.map((entry) => entry.memory.name).join(', ')}`);
  const context = await engram.inject('integration tests');
  console.log(`static part: ${context.staticPart.length} characters; block: ${context.tokens.block} tokens`);
  await engram.forget(memory.id);
  console.log('forgotten: test-style');
  await engram.get('mem_does_not_exist').catch((error) => {
    if (isEngramError(error)) console.log(`error code: ${error.code}`);
  });
} finally {
  await opened.close();
}
