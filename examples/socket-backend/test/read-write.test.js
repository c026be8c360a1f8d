import { runContract } from '../contract-suite.js';

runContract(['write', 'read', 'read-write']);
