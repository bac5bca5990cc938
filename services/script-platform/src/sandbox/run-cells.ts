/**
 * States of a handed-on run's cell, shared between the pool and its worker (SharedArrayBuffer;
 * see the protocol in worker.ts). Its own file: the pool must not import worker.ts, whose top
 * level is the worker's entry.
 */
export const CELL_WAITING = 0;
export const CELL_STARTED = 1;
export const CELL_CANCELLED = 2;
