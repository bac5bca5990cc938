/**
 * A handed-on run's cell, shared between the pool and its worker (SharedArrayBuffer; see the
 * protocol in worker.ts). Its own file: the pool must not import worker.ts, whose top level is the
 * worker's entry.
 *
 * A cell holds the run's id with its state, so a cell reused by a later run (cells go round-robin,
 * and a withdrawn run may still sit in a busy worker's queue) can never be claimed for the old one:
 * both sides compare-and-swap the exact (id, state) value.
 */
export const CELL_WAITING = 0;
export const CELL_STARTED = 1;
export const CELL_CANCELLED = 2;

/** The cell value of run `id` in `state` (29 bits of the id; a wrap needs 2^29 runs meanwhile). */
export function cellValue(id: number, state: number): number {
  return ((id & 0x1fffffff) << 2) | state;
}

/** Move run `id`'s cell from `from` to `to`; false when it holds anything else. */
export function moveCell(cells: Int32Array, cell: number, id: number, from: number, to: number): boolean {
  const expected = cellValue(id, from);
  return Atomics.compareExchange(cells, cell, expected, cellValue(id, to)) === expected;
}
