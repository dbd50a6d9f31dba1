import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Two topic files of Claude Code's auto memory, as it writes them, into `directory`: user_role.md in the
 * v2.1.120 format (type under metadata) and feedback_testing.md in the current one.
 */
export function writeClaudeMemoryTopics(directory: string): void {
  writeFileSync(
    join(directory, 'user_role.md'),
    '---\nname: user-role\ndescription: The user is a data engineer\nmetadata:\n  type: user\n---\n\nThe user is a data engineer who works in Python.\n',
  );
  writeFileSync(
    join(directory, 'feedback_testing.md'),
    '---\nname: Testing Rules\ndescription: No mocks in integration tests\ntype: feedback\n---\n\nIntegration tests hit the real database.\n\n**Why:** mocks hid a broken migration.\n',
  );
}
