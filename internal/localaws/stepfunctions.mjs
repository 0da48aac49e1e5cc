// Step Functions for the tests (StepFunctions in stepfunctions.go): a
// long-running Node process that validates state machine definitions and
// runs executions in aws-local-stepfunctions (Choice, Map with
// MaxConcurrency, Retry with BackoffRate, MaxDelaySeconds and
// JitterStrategy, Catch, intrinsic functions), handing every Task state to
// the Go side over HTTP. Nothing here calls AWS.
//
// stdin, one JSON object per line:
//   {"op":"validate","id","definition":<ASL object>}
//       checks a definition as deployed (asl-validator through the engine);
//   {"op":"start","executionArn","name","definition","input","startTime","zeroWaits"}
//       runs a definition without validating it again (the Go side may have
//       scaled its waits, and the validator wants whole seconds); with
//       zeroWaits, Retry and Wait states wait 0 ms.
// stdout, one JSON object per line:
//   {"op":"validated","id","errors":[...]}
//   {"op":"done","executionArn","status":"SUCCEEDED"|"FAILED","output","error","cause",
//    "states":[<entered state>...],"retries":[{"state","retrier","attempt"}]}
//
// SEED seeds Math.random, which the engine's full jitter draws from, so the
// retry waits are reproducible.
//
// Task callback: POST $TASK_URL with {"executionArn","state","resource","input"};
// the answer is {"result": <json>} or {"error": "<name>", "cause": "<text>"}.
import { createInterface } from 'node:readline';
import { StateMachine } from 'aws-local-stepfunctions';

// mulberry32: a small seeded PRNG in place of Math.random.
let seed = Number(process.env.SEED ?? 1) >>> 0;
Math.random = () => {
  seed = (seed + 0x6d2b79f5) >>> 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

const taskURL = process.env.TASK_URL;
if (!taskURL) {
  process.stderr.write('stepfunctions: TASK_URL is required\n');
  process.exit(2);
}

function collectStates(states, out) {
  for (const [name, s] of Object.entries(states)) {
    out.push([name, s]);
    const nested = s.ItemProcessor ?? s.Iterator;
    if (nested) collectStates(nested.States, out);
    for (const b of s.Branches ?? []) collectStates(b.States, out);
  }
  return out;
}

async function callTask(executionArn, state, resource, input) {
  for (let attempt = 0; ; attempt++) {
    let res;
    try {
      res = await fetch(taskURL, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ executionArn, state, resource, input }),
      });
    } catch (err) {
      // The Go side itself is unreachable: that is a harness failure, not
      // a task error the workflow should see.
      if (attempt < 3) continue;
      throw Object.assign(new Error(`task endpoint unreachable: ${err}`), { name: 'Harness.Unreachable' });
    }
    const body = await res.json();
    if (body.error) {
      throw Object.assign(new Error(body.cause ?? ''), { name: body.error });
    }
    return body.result;
  }
}

async function run(cmd) {
  const handlers = {};
  const retryIntervalOverrides = {};
  const waitTimeOverrides = {};
  for (const [name, s] of collectStates(cmd.definition.States, [])) {
    if (s.Retry && cmd.zeroWaits) retryIntervalOverrides[name] = 0;
    if (s.Type === 'Wait' && cmd.zeroWaits) waitTimeOverrides[name] = 0;
    if (s.Type === 'Task') handlers[name] = (input) => callTask(cmd.executionArn, name, s.Resource, input);
  }
  const sm = new StateMachine(cmd.definition, { validationOptions: { noValidate: true } });
  const execution = sm.run(cmd.input, {
    overrides: { taskResourceLocalHandlers: handlers, retryIntervalOverrides, waitTimeOverrides },
    context: {
      Execution: { Id: cmd.executionArn, Name: cmd.name, Input: cmd.input, StartTime: cmd.startTime },
      // The engine's context object has no State: $$.State.EnteredTime is
      // answered with the time it is read, during the state's own
      // evaluation (the workflow stamps movements and confirmations with it).
      State: {
        get EnteredTime() {
          return new Date().toISOString();
        },
      },
    },
  });
  const out = { op: 'done', executionArn: cmd.executionArn, states: [], retries: [] };
  const logs = (async () => {
    for await (const ev of execution.eventLogs) {
      if (ev.type === 'StateEntered') out.states.push(ev.state.name);
      if (ev.type === 'StateRetried') out.retries.push({ state: ev.state.name, retrier: ev.retry?.retrier, attempt: ev.retry?.attempt });
    }
  })();
  try {
    out.output = await execution.result;
    out.status = 'SUCCEEDED';
  } catch (err) {
    out.status = 'FAILED';
    out.error = err?.cause?.name ?? err?.name;
    out.cause = err?.cause?.message ?? err?.message;
  }
  await logs.catch(() => {});
  process.stdout.write(JSON.stringify(out) + '\n');
}

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
const running = new Set();
for await (const line of rl) {
  if (!line.trim()) continue;
  const cmd = JSON.parse(line);
  if (cmd.op === 'validate') {
    const out = { op: 'validated', id: cmd.id, errors: [] };
    try {
      new StateMachine(cmd.definition, { validationOptions: { checkArn: true, checkPaths: true } });
    } catch (err) {
      out.errors.push(String(err?.message ?? err));
    }
    process.stdout.write(JSON.stringify(out) + '\n');
    continue;
  }
  if (cmd.op !== 'start') continue;
  const p = run(cmd).catch((err) => {
    process.stdout.write(JSON.stringify({ op: 'done', executionArn: cmd.executionArn, status: 'FAILED', error: 'Harness.Crash', cause: String(err) }) + '\n');
  });
  running.add(p);
  p.finally(() => running.delete(p));
}
await Promise.all(running);
