// A small CPU-bound workload for `node --cpu-prof`: a sieve, a recursive Fibonacci and a short
// wait (the wait shows up as (idle) ticks).
'use strict';

function sieve(limit) {
  const composite = new Uint8Array(limit + 1);
  let count = 0;
  for (let i = 2; i <= limit; i++) {
    if (composite[i]) continue;
    count++;
    for (let j = i * i; j <= limit; j += i) composite[j] = 1;
  }
  return count;
}

function fib(n) {
  return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

function main() {
  let primes = 0;
  for (let round = 0; round < 20; round++) primes += sieve(200000);
  const f = fib(25);
  setTimeout(() => console.log(primes, f), 30);
}

main();
