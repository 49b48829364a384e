import { execFile } from 'node:child_process';

/** The redis-cli binary (REDIS_CLI_BIN or redis-cli on PATH). */
export function redisCliBin(env: NodeJS.ProcessEnv = process.env): string {
  return env.REDIS_CLI_BIN || 'redis-cli';
}

/** Runs `redis-cli` with `args` and resolves with its output; rejects with its stderr when it fails. */
export function redisCli(args: readonly string[], timeoutMs = 30_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(redisCliBin(), [...args], { timeout: timeoutMs, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err) reject(new Error(`redis-cli ${args.join(' ')} failed: ${stderr || stdout || err.message}`));
      else resolve(stdout);
    });
  });
}

/** One command to the server on `port` (127.0.0.1), its raw reply text. */
export function cliCommand(port: number, ...command: string[]): Promise<string> {
  return redisCli(['-h', '127.0.0.1', '-p', String(port), ...command], 5_000);
}

/** Polls `check` every 50 ms until it resolves true, at most `timeoutMs`; then rejects with `what`. */
export async function pollUntil(check: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      // not there yet (a server starting, a command refused meanwhile)
    }
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
