// `engram/testing/suites`: the conformance suites every implementation of a contract passes. Each
// registers vitest tests when called (at a test file's top level), so this entry needs vitest
// installed; the test doubles alone are `engram/testing`, which does not.
// test/exports.test.ts pins this list: a change to it is a deliberate diff.
export { runMemoryStoreSuite, type MemoryStoreSuiteOptions, type MemoryStoreUnderTest } from './memory-store-suite.js';
export { runLanguageModelSuite } from './language-model-suite.js';
export type {
  LanguageModelSuiteOptions,
  LanguageModelCapabilities,
  SuiteModelOptions,
  SuiteServerOptions,
} from './language-model-suite-case.js';
