#!/usr/bin/env bash
# Model tests, small variants (default suite): export ResNet-50, MobileNet-V2, Inception-V3,
# BERT, GPT-2 and a recurrent tagger (LSTM + GRU) at reduced size from PyTorch into the build tree (cached by a stamp), run
# them with `hidetc run` at opsets 13 and 17 and compare with PyTorch's outputs.
# Exits 77 (ctest SKIP_RETURN_CODE) with a SKIP line when PyTorch is not installed.
# usage: cli_models_small.sh HIDETC SOURCE_DIR
set -u
hidetc=$1 src=$2
build=$(cd "$(dirname "$hidetc")" && pwd)
exec bash "$src/tests/models/run.sh" --small "$hidetc" "$build/models-small"
