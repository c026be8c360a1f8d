import { runContract } from '../contract-suite.js';

runContract(['latch', 'election']);
