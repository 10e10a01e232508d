# Sourced (not run) by the bench scripts that make their inputs or their expected values with
# NumPy. Installs NumPy from PyPI with pip where python3 lacks it, so a fresh machine needs no
# set-up by hand. (benches/gpu.sh does not use it: the device machine reaches no registry.)
python3 -c 'import numpy' 2>/dev/null || python3 -m pip install --quiet numpy
