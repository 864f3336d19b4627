# Sourced by the cuda-*-tiles*.sh run scripts after gpu_setup.sh: the tile cases built into /tmp/art/${KTILES:-ktiles}
# (kernel_tiles.py build) run on the GPU host: per-call times and errors after 200 calls into
# $out/$1.txt, then ncu kernel times per case and tile into $out/$1-ncu.txt (printed).
name=${1:?result name}
timeout ${RUN_TIMEOUT:-150} python3 bench/experiments/kernel_tiles.py run /tmp/art/${KTILES:-ktiles} > $out/$name.txt 2>&1
echo "rc=$?" >> $out/$name.txt
grep -v Warn $out/$name.txt | cut -c1-500
timeout ${NCU_TIMEOUT:-200} ncu --clock-control none --csv --metrics gpu__time_duration.sum \
    python3 bench/experiments/kernel_tiles.py profile /tmp/art/${KTILES:-ktiles} > /tmp/ncu.csv 2>&1
python3 bench/experiments/kernel_tiles.py table /tmp/art/${KTILES:-ktiles} /tmp/ncu.csv > $out/$name-ncu.txt 2>&1
cat $out/$name-ncu.txt
