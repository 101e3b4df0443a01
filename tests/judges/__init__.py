"""Tests for the judge back-ends (a package so test module names do not clash with tests/stats)."""
