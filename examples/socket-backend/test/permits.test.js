import { runContract } from '../contract-suite.js';

runContract(['semaphore', 'counter-semaphore', 'multi-lock']);
