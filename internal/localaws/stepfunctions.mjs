// ASL harness: validates a state machine definition with asl-validator and
// runs scenarios in aws-local-stepfunctions, in one Node process, for the Go
// tests of internal/localaws (RunWorkflow). Request on stdin, report on stdout (JSON).
//
// Request: {"definition": <ASL object>, "scenarios": [{"name", "input",
//   "tasks": {"<state name>": [<step>...]}, "context": {...}}]}
// A step is {"result": <json>} or {"error": "<name>", "cause": "<text>"};
// the n-th call of a state uses the n-th step (the last one repeats).
// Every Task state needs a step list: nothing here calls AWS.
// Retry waits are overridden to 0 ms for every state, and Wait states too,
// unless the scenario sets "realWaits": then the engine waits as the
// definition says (its Retry intervals, backoff, cap and jitter).
//
// Report: {"valid", "validationErrors", "scenarios": [{"name", "status"
//   ("SUCCEEDED" | "FAILED"), "output", "error", "cause", "calls":
//   {"<state>": [<input>...]}, "callTimes": {"<state>": [<ms since start>...]},
//   "retries": [{"state", "retrier", "attempt"}],
//   "caught": [{"state", "catcher"}], "states": ["<entered state>"...]}]}
import { createRequire } from 'node:module';
import { StateMachine } from 'aws-local-stepfunctions';

const require = createRequire(import.meta.url);
const aslValidator = require('asl-validator');

function readStdin() {
  return new Promise((resolve, reject) => {
    let data = '';
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (c) => (data += c));
    process.stdin.on('end', () => resolve(data));
    process.stdin.on('error', reject);
  });
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

async function runScenario(definition, sc) {
  const all = collectStates(definition.States, []);
  const calls = {};
  const callTimes = {};
  const t0 = Date.now();
  const handlers = {};
  const retryOverrides = {};
  const waitOverrides = {};
  for (const [name, s] of all) {
    if (s.Retry && !sc.realWaits) retryOverrides[name] = 0;
    if (s.Type === 'Wait' && !sc.realWaits) waitOverrides[name] = 0;
    if (s.Type !== 'Task') continue;
    const steps = sc.tasks?.[name];
    handlers[name] = async (input) => {
      (calls[name] ??= []).push(input);
      (callTimes[name] ??= []).push(Date.now() - t0);
      if (!steps || steps.length === 0) {
        const e = new Error(`harness: no step for task state ${name}`);
        e.name = 'Harness.NoStep';
        throw e;
      }
      const step = steps[Math.min(calls[name].length - 1, steps.length - 1)];
      if (step.error) {
        const e = new Error(step.cause ?? '');
        e.name = step.error;
        throw e;
      }
      return step.result;
    };
  }
  const sm = new StateMachine(definition, { validationOptions: { checkArn: true, checkPaths: true } });
  const run = sm.run(sc.input, {
    overrides: {
      taskResourceLocalHandlers: handlers,
      retryIntervalOverrides: retryOverrides,
      waitTimeOverrides: waitOverrides,
    },
    context: sc.context,
  });
  const retries = [];
  const caught = [];
  const states = [];
  const report = { name: sc.name, calls, callTimes, retries, caught, states };
  const logs = (async () => {
    for await (const ev of run.eventLogs) {
      switch (ev.type) {
        case 'StateEntered':
          states.push(ev.state.name);
          break;
        case 'StateRetried':
          retries.push({ state: ev.state.name, retrier: ev.retry?.retrier, attempt: ev.retry?.attempt });
          break;
        case 'StateCaught':
          caught.push({ state: ev.state.name, catcher: ev.catch?.catcher });
          break;
      }
    }
  })();
  try {
    report.output = await run.result;
    report.status = 'SUCCEEDED';
  } catch (err) {
    report.status = 'FAILED';
    report.error = err?.cause?.name ?? err?.name;
    report.cause = err?.cause?.message ?? err?.message;
  }
  await logs.catch(() => {});
  return report;
}

const req = JSON.parse(await readStdin());
const { isValid, errors } = aslValidator(req.definition);
const out = { valid: isValid, validationErrors: errors ?? [], scenarios: [] };
for (const sc of req.scenarios ?? []) {
  out.scenarios.push(await runScenario(req.definition, sc));
}
process.stdout.write(JSON.stringify(out));
