// Runs fauxqs on 127.0.0.1 (port chosen by the OS) with a clock that moves
// only when told: Date.now, which fauxqs and its caches read for every
// deadline, returns a virtual time. The Go side talks over stdin/stdout:
//
//   stdout "ready <port> <now-ms>"   once the server listens
//   stdin  "advance <ms>"            stdout "now <now-ms>"
//
// stdin closing (the test process ended, or Close) stops the server.
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const [appPath, startMs] = process.argv.slice(1);
let now = Number(startMs);
if (!appPath || !Number.isFinite(now)) {
  console.error("usage: launcher.mjs <fauxqs dist/app.js> <start epoch ms>");
  process.exit(2);
}
Date.now = () => now;

const { buildApp } = await import(pathToFileURL(appPath).href);
const app = buildApp({ logger: false, defaultRegion: "eu-west-1" });
const address = await app.listen({ port: 0, host: "127.0.0.1" });
process.stdout.write(`ready ${new URL(address).port} ${now}\n`);

const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const [cmd, arg] = line.trim().split(/\s+/);
  if (cmd === "advance" && /^\d+$/.test(arg ?? "")) {
    now += Number(arg);
    process.stdout.write(`now ${now}\n`);
  } else {
    process.stdout.write(`error unknown command ${JSON.stringify(line)}\n`);
  }
});
lines.on("close", async () => {
  await app.close();
  process.exit(0);
});
