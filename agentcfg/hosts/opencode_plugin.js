// agentcfg stop hook for OpenCode, written by `agentcfg hooks install --host opencode`.
// When a top-level session goes idle it asks `agentcfg hook stop` whether the claimed roadmap
// still has work, and if so continues the session with the text it gets back. After OpenCode
// compacts a session it asks `agentcfg hook session-start` where the run stands and adds that
// to the session without a reply. Anything that goes wrong lets the session rest.
// `agentcfg hooks uninstall --host opencode` removes it.
import { spawn } from "node:child_process";

const COMMAND = []; // the hook command, filled in at install
// the same program's re-injection after a compaction: `hook session-start` for `hook stop`
const AT = COMMAND.findIndex((word, i) => word === "stop" && COMMAND[i - 1] === "hook");
const START_COMMAND =
  AT < 0 ? [] : [...COMMAND.slice(0, AT), "session-start", ...COMMAND.slice(AT + 1)];
const OWN_TEXTS = ["run-continuation:", "turn-end-gate:", "agentcfg: this session holds"];
const TIMEOUT_MS = 30000;

export const AgentcfgStop = async ({ client, directory }) => {
  const busy = new Set(); // sessions whose idle is being answered: one answer at a time
  const compacted = new Map(); // session -> its re-injection in flight, which an idle waits for
  return {
    // the agent's shell learns its session, so `agentcfg sessions claim` can bind it
    "shell.env": async (input, output) => {
      if (input && input.sessionID) output.env.OPENCODE_SESSION_ID = input.sessionID;
    },
    event: async ({ event }) => {
      const id = event && event.properties?.sessionID;
      if (id && event.type === "session.compacted") {
        const done = reinject(client, directory, id).catch(() => {}); // nothing added, then
        compacted.set(id, done);
        await done;
        if (compacted.get(id) === done) compacted.delete(id);
        return;
      }
      if (!id || event.type !== "session.idle" || busy.has(id)) return;
      busy.add(id);
      try {
        await compacted.get(id); // the step is back in the session before it is continued
        await answerIdle(client, directory, id);
      } catch {
        // the session rests: a broken hook never keeps an agent going
      } finally {
        busy.delete(id);
      }
    },
  };
};

async function answerIdle(client, directory, id) {
  const session = (await client.session.get({ path: { id } })).data;
  if (!session || session.parentID) return; // a subagent's session is its parent's business
  const messages = (await client.session.messages({ path: { id } })).data || [];
  const payload = stopPayload(id, session.directory || directory, messages);
  const answer = parseAnswer(await runHook(JSON.stringify(payload)));
  if (answer.block) {
    await client.session.promptAsync({
      path: { id },
      body: { parts: [{ type: "text", text: answer.block }] },
    });
  } else if (answer.note) {
    await client.app.log({ body: { service: "agentcfg", level: "info", message: answer.note } });
  }
}

async function reinject(client, directory, id) {
  const session = (await client.session.get({ path: { id } })).data;
  if (!session || session.parentID) return;
  const payload = {
    hook_event_name: "session.compacted",
    source: "compact",
    session_id: id,
    cwd: session.directory || directory,
  };
  const text = contextOf(await runHook(JSON.stringify(payload), START_COMMAND));
  if (text) {
    await client.session.prompt({
      path: { id },
      body: { noReply: true, parts: [{ type: "text", text }] },
    });
  }
}

function textOf(message) {
  return (message.parts || [])
    .filter((part) => part.type === "text" && typeof part.text === "string")
    .map((part) => part.text)
    .join("\n");
}

function isOurs(message) {
  const text = textOf(message).trimStart();
  return OWN_TEXTS.some((prefix) => text.startsWith(prefix));
}

function stopPayload(id, cwd, messages) {
  const users = messages.filter((m) => m.info && m.info.role === "user");
  const replies = messages.filter((m) => m.info && m.info.role === "assistant");
  const prompt = users.filter((m) => !isOurs(m)).pop();
  const last = replies[replies.length - 1];
  const lastUser = users[users.length - 1];
  return {
    hook_event_name: "session.idle",
    session_id: id,
    cwd,
    prompt_id: prompt ? prompt.info.id : "",
    reply_id: last ? last.info.id : "", // two replies of the same words are still two replies
    last_assistant_message: last ? textOf(last) : null,
    stop_hook_active: Boolean(lastUser && isOurs(lastUser)),
    // stopped by the person, or by an error OpenCode gave up retrying (a provider's limit):
    // not a turn that ended, so nothing continues it
    interrupted: Boolean(last && last.info.error),
  };
}

function runHook(input, command = COMMAND) {
  return new Promise((resolve) => {
    if (command.length === 0) return resolve({ code: null, stdout: "" });
    let stdout = "";
    let child;
    try {
      child = spawn(command[0], command.slice(1), { stdio: ["pipe", "pipe", "ignore"] });
    } catch {
      return resolve({ code: null, stdout: "" });
    }
    const timer = setTimeout(() => child.kill("SIGKILL"), TIMEOUT_MS);
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.on("error", () => {
      clearTimeout(timer);
      resolve({ code: null, stdout: "" });
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout });
    });
    child.stdin.on("error", () => {});
    child.stdin.end(input);
  });
}

function parseAnswer({ code, stdout }) {
  if (code !== 0) return {};
  let data;
  try {
    data = JSON.parse(stdout || "{}");
  } catch {
    return {};
  }
  if (data && data.decision === "block" && typeof data.reason === "string" && data.reason) {
    return { block: data.reason };
  }
  return data && typeof data.systemMessage === "string" ? { note: data.systemMessage } : {};
}

function contextOf({ code, stdout }) {
  if (code !== 0) return "";
  try {
    const text = JSON.parse(stdout || "{}")?.hookSpecificOutput?.additionalContext;
    return typeof text === "string" ? text : "";
  } catch {
    return "";
  }
}
