// Loads the OpenCode plugin agentcfg writes, as OpenCode would (every export is a plugin), with a
// stand-in client, fires its events at it (all at once, as OpenCode's bus does not wait for a
// plugin) and prints what the plugin did as JSON.
// usage: node opencode_plugin_driver.mjs <plugin.js> <input.json>
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [pluginPath, inputPath] = process.argv.slice(2);
const input = JSON.parse(readFileSync(inputPath, "utf8"));
const calls = [];
const client = {
  session: {
    get: async ({ path }) => ({ data: { id: path.id, ...input.session } }),
    messages: async () => ({ data: input.messages }),
    promptAsync: async (request) => calls.push(["promptAsync", request]),
    prompt: async (request) => calls.push(["prompt", request]),
  },
  app: { log: async (request) => calls.push(["log", request]) },
};
const plugin = await import(pathToFileURL(pluginPath).href);
const hooks = await Promise.all(
  Object.values(plugin).map((init) => init({ client, directory: input.directory })),
);
const env = {};
for (const hook of hooks) {
  await hook["shell.env"]?.({ cwd: input.directory, sessionID: input.session_id, callID: "c1" }, { env });
  await Promise.all(input.events.map((event) => hook.event?.({ event })));
}
console.log(JSON.stringify({ exports: Object.keys(plugin), env, calls }));
