"""A small CPU-bound program for py-spy to record (see SOURCES.md).

The main thread and one named worker thread each run a different pure-Python loop for about
1.5 seconds, so the recording has two threads, a few levels of calls, and both a module-level
frame and function frames.
"""

import threading
import time

RUN_SECONDS = 1.5


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def primes_below(limit):
    found = []
    for candidate in range(2, limit):
        if all(candidate % p for p in found if p * p <= candidate):
            found.append(candidate)
    return found


def crunch_numbers(deadline):
    rounds = 0
    while time.monotonic() < deadline:
        fib(18)
        rounds += 1
    return rounds


def sieve_worker(deadline):
    while time.monotonic() < deadline:
        primes_below(3000)


def main():
    deadline = time.monotonic() + RUN_SECONDS
    worker = threading.Thread(target=sieve_worker, args=(deadline,), name="sieve")
    worker.start()
    crunch_numbers(deadline)
    worker.join()


if __name__ == "__main__":
    main()
