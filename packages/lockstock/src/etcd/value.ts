import type { IKeyValue } from 'etcd3';
import { decodeHolder, encodeHolder, type HolderMetadata, type LockHolderInfo } from '../backend/index.js';
import { ownerOf } from './keys.js';
import { keyOf } from './store.js';

/**
 * The value of a waiter's or holder's key: its mode, then its holder record (issue 37) —
 * `<mode><record>`, where the mode is '' (mutex, reentrant, fair, spin, semaphore, election), 'w' (a
 * read-write key whose owner holds or wants the write side) or 'r' (a reader's), and the record is
 * `encodeHolder(owner, holder)` (JSON: it starts with '{') or '' when the attempt brought none.
 *
 * So the key carries who put it at no extra write, and the forms written before records were kept
 * ('', 'w', 'r': the mode alone) are the same format with an empty record: every reader here reads
 * both. The mode is the first byte, read without parsing the record.
 */
export type KeyMode = '' | 'w' | 'r';

const W = 0x77; // 'w'
const R = 0x72; // 'r'

/** The value to put: the mode, then the holder's record (none without metadata). */
export function keyValue(mode: KeyMode, owner: string, holder: HolderMetadata | undefined): string {
  return holder === undefined ? mode : mode + encodeHolder(owner, holder);
}

/** The mode of a stored value (a value of any other program's reads as ''). */
export function modeOf(value: Buffer): KeyMode {
  const first = value[0];
  return first === W ? 'w' : first === R ? 'r' : '';
}

/** The record part of a stored value: what follows its mode ('' for a value of the old form). */
export function recordOf(value: Buffer): string {
  return value.subarray(modeOf(value).length).toString('utf8');
}

/** True when the key's owner holds or wants the write side of a read-write lock. */
export const isWriter = (kv: IKeyValue): boolean => modeOf(kv.value) === 'w';

/**
 * A holder as inspect() reports it: the owner from the key (the key is the truth about who holds),
 * the metadata from the value's record when it is that owner's. A value of the old form, or a record
 * that is not one, names the owner only.
 */
export function holderOf(dir: string, kv: IKeyValue): LockHolderInfo {
  const owner = ownerOf(dir, keyOf(kv));
  const record = decodeHolder(recordOf(kv.value));
  return record?.owner === owner ? record : { owner };
}
