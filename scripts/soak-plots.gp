# The soak report's plots (scripts/soak.sh): gnuplot -e "dir='OUT'" scripts/soak-plots.gp
# Reads OUT/minutes.csv, process.csv and faults.csv (vri-node-soak writes them); writes OUT/*.png.
# Every plot's x axis is minutes into the soak; grey lines mark the faults.
set datafile separator ','
set terminal pngcairo size 900,360 font ',10' noenhanced
set grid
set key outside right top
set xlabel 'minutes'
set y2range [0:1]
unset y2tics
faults = dir.'/faults.csv'

set output dir.'/latency.png'
set title "vrid's decision latency per minute (its histogram, every call)"
set ylabel 'ms'
set logscale y
plot dir.'/minutes.csv' skip 1 using ($1-0.5):3 with linespoints pt 7 title 'p50', \
     '' skip 1 using ($1-0.5):4 with linespoints pt 5 title 'p99', \
     faults skip 1 using ($1/60):(1) axes x1y2 with impulses lc rgb '#c8c8c8' title 'fault'
unset logscale y

set output dir.'/process.png'
set title "vrid: resident memory, open file descriptors, threads (each kill starts a new vrid)"
set ylabel 'MiB'
set y2label 'count'
set y2range [*:*]
set y2tics
plot dir.'/process.csv' skip 1 using ($1/60):3 with lines lw 2 title 'RSS (MiB)', \
     '' skip 1 using ($1/60):4 axes x1y2 with lines title 'file descriptors', \
     '' skip 1 using ($1/60):5 axes x1y2 with lines title 'threads'
unset y2label
unset y2tics
set y2range [0:1]

set output dir.'/decisions.png'
set title 'decisions vrid made, client calls and faults, per minute'
set ylabel 'per minute'
set style fill solid 0.5
set boxwidth 0.3
plot dir.'/minutes.csv' skip 1 using ($1-0.65):2 with boxes title 'decisions', \
     '' skip 1 using ($1-0.35):5 with boxes title 'client calls', \
     '' skip 1 using ($1-0.5):6 with linespoints pt 9 title 'faults'
