import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LanguageModelServer } from '../../src/testing/loopback-model-server.js';
import { startOpenAiResponsesServer } from '../../src/testing/openai-responses-server.js';
import { agentCliOrSkip } from '../support/agent-clis.js';
import { codexLoopConfig, runProcess } from '../support/agent-e2e.js';
import { eventually, hookContext, requestsOf, useClaudeWorld } from '../support/claude-code-harness.js';

// One memory for every agent (issue 28 item 4): in one HOME, `engram install --detect` finds Claude
// Code and Codex by their config folders and installs both; "remember that …" said in the real
// Codex CLI (against the loopback Responses server) is stored by Codex's Stop hook and its worker,
// and the next session of the real Claude Code CLI (`claude -p`, loopback Messages server) in the
// same project gets it from its UserPromptSubmit hook, while a session in another project never does.
// Built dist/ first (`npm run build`): the hooks run engram's launcher.

const RUN_TIMEOUT_MS = 120_000;
const codex = agentCliOrSkip('codex', 'cross-agent memory');

describe.skipIf(!codex)('a fact told to Codex reaches the next Claude Code session in the same project only', () => {
  const { server: messages, world } = useClaudeWorld();
  let responses: LanguageModelServer;
  let projectA: string;
  let projectB: string;
  beforeAll(async () => {
    responses = await startOpenAiResponsesServer();
    projectA = world.project('alpha');
    projectB = world.project('beta');
    for (const project of [projectA, projectB]) spawnSync('git', ['init', '-q', project]);
    mkdirSync(join(world.home, '.claude'));
    mkdirSync(join(world.home, '.codex'));
    writeFileSync(join(world.home, '.codex', 'config.toml'), [...codexLoopConfig(responses.url), ''].join('\n'));
  });
  afterAll(async () => {
    await responses?.close();
  });

  const codexExec = (prompt: string, cwd: string) =>
    runProcess(codex!.command, [...codex!.args, 'exec', '--skip-git-repo-check', prompt], {
      cwd,
      env: { ...world.env, LOOP_API_KEY: 'test' },
      timeoutMs: RUN_TIMEOUT_MS - 10_000,
    });

  it(
    'install --detect installs both; said in Codex in A, injected by Claude Code in A, never in B',
    async () => {
      const installed = await world.engram(['install', '--detect'], { cwd: projectA });
      expect(installed.code, installed.stderr).toBe(0);
      expect(installed.stdout).toMatch(/^claude-code: Installed engram for Claude Code/m);
      expect(installed.stdout).toMatch(/^codex: Installed engram for Codex/m);

      const told = await codexExec('Remember that the release branch is called trunk-blue.', projectA);
      expect(told.code, told.stderr).toBe(0);
      expect(responses.requests.length).toBeGreaterThan(0);
      // Codex's Stop hook spools the rollout; the detached worker stores the explicit statement.
      const stored = await eventually(
        async () => {
          const list = await world.engram(['list', '--json'], { cwd: projectA });
          const memories = (list.json().memories ?? list.json()) as Array<{ content: string; scope: string }>;
          return memories.find((memory) => memory.content.includes('trunk-blue'));
        },
        90,
        1_000,
      );
      expect(stored.scope).toMatch(/^project:/);

      const inA = await world.claude(['What is the release branch called?'], { cwd: projectA, prefix: 'a1' });
      expect(inA.code, inA.stderr).toBe(0);
      const [requestA] = requestsOf(messages, 'a1');
      expect(requestA, 'Claude Code sent no request in project A').toBeDefined();
      expect(hookContext(requestA!, 'UserPromptSubmit')).toContain('trunk-blue');

      const inB = await world.claude(['What is the release branch called?'], { cwd: projectB, prefix: 'b1' });
      expect(inB.code, inB.stderr).toBe(0);
      expect(requestsOf(messages, 'b1').length).toBeGreaterThan(0);
      for (const request of requestsOf(messages, 'b1')) expect(request.rawBody).not.toContain('trunk-blue');
    },
    RUN_TIMEOUT_MS * 3,
  );
});
