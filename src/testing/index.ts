export { runMemoryStoreSuite, type MemoryStoreSuiteOptions, type MemoryStoreUnderTest } from './memory-store-suite.js';
