// Seed 002's four JavaScript hook examples, driven by the TypeScript SDK
// (@anthropic-ai/claude-agent-sdk) against the hookbox binary.
//
// Usage: node seed_002_ts.mjs EXAMPLE PROMPT, EXAMPLE one of block_dangerous,
// auto_approve_reads, add_timeout, audit_log. The seed writes them for cortex-code-agent-sdk's
// `createCortexCodeSession(options)`; here only the import and the entry point change: the
// Anthropic SDK's `query({ prompt, options })`, whose options gain `pathToClaudeCodeExecutable`
// and `model` (from HOOKBOX_SDK_CLI and HOOKBOX_SDK_MODEL). The seed's TypeScript cast
// `(input.tool_input as any)` is written `input.tool_input`: Node runs JavaScript. The two
// examples the seed gives as a bare `hooks: {...}` fragment sit in the same options as the
// others. Every message the SDK yields is printed as one JSON line.

import { query } from "@anthropic-ai/claude-agent-sdk";
import { appendFileSync } from "node:fs";

const CLI = process.env.HOOKBOX_SDK_CLI;
const MODEL = process.env.HOOKBOX_SDK_MODEL;
const [EXAMPLE, PROMPT] = process.argv.slice(2);

// ---- Bloquer les outils dangereux ----

const blockDangerous = {
  cwd: process.cwd(),
  hooks: {
    PreToolUse: [
      {
        matcher: "Bash",
        hooks: [
          async (input) => {
            const command = input.tool_input?.command ?? "";
            if (command.includes("rm -rf") || command.includes("DROP TABLE")) {
              return {
                decision: "block",
                reason: "Destructive commands are not allowed",
              };
            }
            return {};
          },
        ],
      },
    ],
  },
};

// ---- Autoriser automatiquement les demandes d'autorisations en lecture seule ----

const autoApproveReads = {
  cwd: process.cwd(),
  hooks: {
    PermissionRequest: [
      {
        matcher: "Read|Glob|Grep",
        hooks: [
          async (input) => {
            return {
              hookSpecificOutput: {
                hookEventName: "PermissionRequest",
                decision: { behavior: "allow" },
              },
            };
          },
        ],
      },
    ],
  },
};

// ---- Modifier l'entrée d'outil ----

const addTimeout = {
  cwd: process.cwd(),
  hooks: {
    PreToolUse: [
      {
        matcher: "Bash",
        hooks: [
          async (input) => {
            const originalCommand = input.tool_input?.command ?? "";
            return {
              hookSpecificOutput: {
                hookEventName: "PreToolUse",
                updatedInput: { command: `timeout 30 ${originalCommand}` },
              },
            };
          },
        ],
      },
    ],
  },
};

// ---- Journaliser les audits ----

const auditLog = {
  cwd: process.cwd(),
  hooks: {
    PostToolUse: [
      {
        hooks: [
          async (input) => {
            const entry = {
              timestamp: new Date().toISOString(),
              tool: input.tool_name,
              input: input.tool_input,
              sessionId: input.session_id,
            };
            appendFileSync("audit.log", JSON.stringify(entry) + "\n");
            return {};
          },
        ],
      },
    ],
  },
};

const EXAMPLES = {
  block_dangerous: blockDangerous,
  auto_approve_reads: autoApproveReads,
  add_timeout: addTimeout,
  audit_log: auditLog,
};

if (!(EXAMPLE in EXAMPLES)) {
  throw new Error(`unknown example ${EXAMPLE}; one of ${Object.keys(EXAMPLES).join(", ")}`);
}
const options = {
  ...EXAMPLES[EXAMPLE],
  pathToClaudeCodeExecutable: CLI,
  model: MODEL,
  stderr: (line) => process.stderr.write(line),
};
for await (const message of query({ prompt: PROMPT, options })) {
  console.log(JSON.stringify(message));
}
