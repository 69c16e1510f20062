"""Tests of pipeline/fs: files we read and write, regions of a user's file, paths and banks."""
