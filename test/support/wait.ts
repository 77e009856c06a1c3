// The shared polling helpers live in @loopline/testkit (package tests use them too); the e2e and
// fault tests import them from here.

export { sleep, until } from '@loopline/testkit';
