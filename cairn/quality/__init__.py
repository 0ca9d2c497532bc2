"""Measuring recall on eval cases (`cairn eval`) and fitting its gate thresholds on them (`cairn calibrate`)."""
