#!/bin/bash
# A curriculum for issue 13's squad runs: scripted opponents first, then ko93's self-play recipe.
#   experiments/squad_curriculum.sh NAME SEED "SECONDS|POOL_SCRIPTED|SHARE" ...
# Each stage is a train_ppo pool run that continues the previous stage's ppo.pt (--init) for
# SECONDS of training with --pool-scripted POOL_SCRIPTED on a SHARE of its rows; the last stage
# should be ko93's "rush,marksman,cover|0.3". Stage i is seeded SEED*10+i and written to
# runs/curriculum/NAME/stage<i> (its log beside it). Session 34's two runs (README, "A curriculum"):
#   experiments/squad_curriculum.sh cu135 135 '1200|rush,marksman,cover|0.9' '2390|rush,marksman,cover|0.3'
#   experiments/squad_curriculum.sh cu136 136 '600|rush|0.9' '600|marksman,cover|0.9' '2390|rush,marksman,cover|0.3'
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 NAME SEED 'SECONDS|POOL_SCRIPTED|SHARE' ..." >&2; exit 2
fi
NAME=$1; SEED=$2; shift 2
for spec in "$@"; do  # every stage checked before any trains
  IFS='|' read -r SECS POL SHARE <<< "$spec"
  if [ -z "$SECS" ] || [ -z "$POL" ] || [ -z "$SHARE" ]; then
    echo "$0: stage '$spec' is not SECONDS|POOL_SCRIPTED|SHARE (e.g. '600|rush|0.9')" >&2; exit 2
  fi
done
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
OUT=runs/curriculum/$NAME
mkdir -p "$OUT"
INIT=()
i=0
for spec in "$@"; do
  IFS='|' read -r SECS POL SHARE <<< "$spec"
  i=$((i+1))
  "$PY" -m experiments.train_ppo --scenario configs/training/squad_damage_own.yaml \
    --move-view --attack-view --pool --pool-every 10 --pool-size 30 --num-envs 256 \
    --num-steps 64 --epochs 4 --minibatches 8 --ent-coef 0.01 --hidden 256,256 --arch entity \
    --embed 64 --eval-every 40 --eval-vs rush,marksman,tactician --eval-battles 100 \
    --final-eval-battles 0 --potential clear_shots=1.0,exposed=-1.0 \
    --knockouts enemies_out=0.25,allies_out=-0.25 --lr 2e-4 --side-shares blue=0.65,red=0.35 \
    --no-progress --pool-scripted "$POL" --pool-scripted-share "$SHARE" \
    --total-timesteps 11000000 --seed $((SEED*10+i)) --max-train-seconds "$SECS" \
    "${INIT[@]}" --out "$OUT/stage$i" > "$OUT/stage$i.log" 2>&1
  INIT=(--init "$OUT/stage$i/ppo.pt")
done
echo "$OUT/stage$i/ppo.pt"
