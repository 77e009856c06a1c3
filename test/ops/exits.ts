// A child for test/ops/demo-services.test.ts: a service that dies before it ever answers.
process.exitCode = 3;
