# SPDX-License-Identifier: BSD-3-Clause
"""The soak test's parts; bench/soak is its command (see its --help)."""
