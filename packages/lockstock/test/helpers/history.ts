// The section records and their checks live with the contract suite (lockstock/testing); the fault
// tests' probes record the same shape.
export {
  checkHistory,
  sectionEvents,
  type BoundReport,
  type SectionRecord,
} from '../../src/testing/history.js';
