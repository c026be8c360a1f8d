import { execFileSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, readdirSync, renameSync, symlinkSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { MissingBinaryError } from './errors.js';

/** Returns the absolute path of an executable on PATH, or undefined. */
export function whichExecutable(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this PATH entry; keep looking
    }
  }
  return undefined;
}

export const isRoot = (): boolean => process.getuid?.() === 0;

/** Where lockstock keeps generated helper files (symlinks to server binaries). */
export function cacheDir(): string {
  const base = process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache');
  return join(base, 'lockstock');
}

/**
 * Installs Debian packages with apt-get when running as root. Waits for the dpkg lock (parallel test
 * workers may race here) and runs `apt-get update` once if the first attempt fails (fresh machines
 * have empty package lists). Throws MissingBinaryError carrying the exact command otherwise.
 */
export function installDebianPackages(binary: string, packages: string[]): void {
  const command = `sudo apt-get update && sudo apt-get install -y ${packages.join(' ')}`;
  if (!isRoot() || !whichExecutable('apt-get')) {
    throw new MissingBinaryError(binary, command);
  }
  const install = () =>
    execFileSync(
      'apt-get',
      ['-o', 'DPkg::Lock::Timeout=300', 'install', '-y', '-q', '--no-install-recommends', ...packages],
      { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } },
    );
  try {
    install();
  } catch {
    try {
      execFileSync('apt-get', ['-o', 'DPkg::Lock::Timeout=300', 'update', '-q'], { stdio: 'ignore' });
      install();
    } catch (error) {
      throw new MissingBinaryError(
        binary,
        command,
        `apt-get failed: ${(error as Error).message.split('\n')[0]}`,
      );
    }
  }
}

/**
 * Makes `linkName` in lockstock's cache dir point at `target` and returns its path. Used for binaries
 * that choose their mode from argv[0] (Debian's redis-tools ships redis-check-rdb, which runs as a
 * server when called `redis-server`). Created via rename so concurrent processes never see a half link.
 */
export function linkAs(target: string, linkName: string): string {
  const dir = join(cacheDir(), 'bin');
  const link = join(dir, linkName);
  if (existsSync(link)) return link;
  mkdirSync(dir, { recursive: true });
  const temp = `${link}.${process.pid}.${Date.now()}`;
  symlinkSync(target, temp);
  renameSync(temp, link);
  return link;
}

/** Newest `/usr/lib/postgresql/<version>/bin` directory, where Debian keeps the server binaries. */
export function debianPostgresBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'postgres')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], 'bin');
}
