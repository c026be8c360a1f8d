import { runContract } from '../contract-suite.js';

runContract(['mutex', 'reentrant', 'spin', 'fair']);
