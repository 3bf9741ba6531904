// The one request queue of a page: every action waits for the ones asked for before it, so
// two quick clicks never race (the server would serialize them anyway, but a page must show
// the answers in the order it asked). The stepper's actions and compare mode's pair use it.

/** A queue: `enqueue(task)` runs `task` after every task queued before it and resolves (or
 * rejects) with its result; a failed task never stops the ones after it. */
export function createQueue() {
  let tail = Promise.resolve();
  return function enqueue(task) {
    const job = tail.then(task);
    tail = job.catch(() => false);
    return job;
  };
}
