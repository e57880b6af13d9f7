cmake_minimum_required(VERSION 3.25)
# cmake -DHG_SOURCE=<repo> -DROOT=<tree> -P check_tree.cmake: the layering check
# (cmake/HgLayers.cmake) over the tree at ROOT; exits non-zero with its message when a rule
# is broken.
include(${HG_SOURCE}/cmake/HgLayers.cmake)
hg_check_layers_in(${ROOT})
