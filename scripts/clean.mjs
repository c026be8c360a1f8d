// Removes dist/ so files deleted from src/ never linger in the build.
import { rmSync } from 'node:fs';
rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true });
