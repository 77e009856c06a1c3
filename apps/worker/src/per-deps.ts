// A value made once per deps object (or per any object a default belongs to, e.g. the llm
// configuration), on first use: the process's one WorkerDeps gets one, and each test's own deps
// object its own (held weakly, so a test's goes with it).

/** `make(deps)` the first time a deps object asks, the same value every time after. */
export function perDeps<D extends object, T>(make: (deps: D) => T): (deps: D) => T {
  const made = new WeakMap<D, T>();
  return (deps) => {
    let value = made.get(deps);
    if (value === undefined) {
      value = make(deps);
      made.set(deps, value);
    }
    return value;
  };
}
