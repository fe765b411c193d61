#!/usr/bin/python3
"""Build imrestore's training and held-out photo sets from Debian packages and
pinned public GitHub repositories.

Usage (from the repository root or anywhere):

    /usr/bin/python3 weights/data/build_dataset.py [-j N] [--repo OWNER/NAME=GITDIR ...]

Needs: apt-get (with bookworm sources configured), dpkg-deb, git,
python3-numpy, python3-pil. Writes

    weights/data/cache/*.deb          downloaded packages (git-ignored)
    weights/data/train/NAME.png       training photos (git-ignored)
    weights/data/heldout/NAME.png     held-out photos (git-ignored)
    weights/data/MANIFEST.tsv         one line per photo (committed)

and reads the repositories' photos from local git copies (git-ignored, made
once, see weights/data/README.md): weights/data/cache/repos/OWNER+NAME.git
unless --repo names another git directory. Every Debian package is pinned by
its version, every repository photo by its commit, every source file by its
SHA-256, and the target sizes come from a fixed seed per photo name, so a
rebuild gives the same pixels. See weights/data/README.md for the sources,
licenses and the files that were rejected (and why).

The literature's test sets (Kodak24, CBSD68/BSD68/BSDS500, McMaster, LIVE1,
Set12, Urban100, Classic5, SIDD, DND, RNI15, PolyU, Nam) and OpenCV's sample
images are never used here: they are the independent measure.
"""

import argparse
import hashlib
import io
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image, ImageOps

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.path.join(HERE, "cache")
REPO_CACHE = os.path.join(CACHE, "repos")
TRAIN = os.path.join(HERE, "train")
HELDOUT = os.path.join(HERE, "heldout")
MANIFEST = os.path.join(HERE, "MANIFEST.tsv")

# Debian bookworm packages, pinned.
PACKAGES = {
    "lomiri-wallpapers-16.04": "20.04.0-2",
    "lomiri-wallpapers-20.04": "20.04.0-2",
    "lxqt-themes": "1.2.0-1",
    "mate-backgrounds": "1.26.0-1",
    "palapeli-data": "4:22.12.3-1",
    "plasma-workspace-wallpapers": "4:5.27.5-2",
    "python3-skimage": "0.19.3-8",
    "python3-sklearn": "1.2.1+dfsg-1",
    "python-matplotlib-data": "3.6.3-1",
}

# Public GitHub repositories. A photo's origin is "OWNER/NAME@COMMIT": the
# file is read with `git cat-file blob COMMIT:PATH` from a local copy
# (git clone --mirror), so a photo a later commit removed or re-encoded is
# still the same bytes.
BUDGIE = "BuddiesOfBudgie/budgie-backgrounds"
POP = "pop-os/wallpapers"
ELEMENTARY = "elementary/wallpapers"
KDE = "KDE/plasma-workspace-wallpapers"
FEDORA = "fedoradesign/backgrounds"  # Fedora's supplemental wallpapers: photos in older commits only
SOLUS = "getsolus/artwork"
UBUNTU = "twinysam/ubuntu-wallpapers"  # git-ubuntu's import of Ubuntu's ubuntu-wallpapers source package
REPOS = (BUDGIE, POP, ELEMENTARY, KDE, FEDORA, SOLUS, UBUNTU)
KDE_OLD = "b76da38ddbff8b9a0384904bc649a1dc7228273e"  # the last commit with KDE's older photos

# License strings, from each package's /usr/share/doc/PKG/copyright, or where
# that file has no per-file entry, from the upstream statement named here.
L_PLASMA = ("GPL-2+ (debian/copyright, Files: *); LGPL-3 per the wallpaper's "
            "metadata.json")
L_MATE = "GPL-2+ (debian/copyright, per-file entry)"
L_LXQT = ("CC-BY-SA-3.0 (the package's wallpapers/License: 'Copyright 2022: LXQt Project Team' 'Licensed "
          "under https://creativecommons.org/licenses/by-sa/3.0/'; debian/copyright Files: * LGPL-2.1+)")
L_PALAPELI = "per the puzzle's .desktop file (X-KDE-PluginInfo-License, -Author, -Website); package GPL-2+"
L_SKIMAGE_CC0T = ("CC0-1.0 (CC0Textures, per skimage/data/_fetchers.py); "
                  "package BSD-3-Clause")
L_SKLEARN = ("CC-BY-2.0, by danielbuechele / vultilion on Flickr (per "
             "sklearn/datasets/images/README.txt); package BSD-3-Clause")
L_BUDGIE = ("CC0-1.0 (budgie-backgrounds LICENSE and README: every image CC0 or public domain, "
            "checked by the maintainers); author not named in the repository")
L_POP = ("public domain: an Unsplash photo of the CC0 era (before June 2017), "
         "pop-os/wallpapers README 'Unsplash photos are in the public domain'")
L_ELEM_CC0 = ("CC0-1.0: Unsplash photo published before June 8, 2017, per elementary/wallpapers "
              "debian/copyright (branch deb-packaging, commit 10cc954)")
L_ELEM_PD = ("public domain: listed under 'Unsplash photos are public domain' in elementary/wallpapers "
             "debian/copyright (commits 17a0e34 and bedc005)")
L_ELEM_BY2 = ("CC-BY-2.0: listed under 'Licensed under Attribution 2.0 Generic' in elementary/wallpapers "
              "debian/copyright (commit 17a0e34)")

SK = "/usr/lib/python3/dist-packages/skimage/data/"
LW16 = "/usr/share/backgrounds/"
MATE = "/usr/share/backgrounds/mate/nature/"
LXQT = "/usr/share/lxqt/wallpapers/"
PALAPELI = "/usr/share/palapeli/collection/"
PL = "/usr/share/wallpapers/"


def budgie(name, split, commit, file):
    return ("budgie-" + name, split, f"{BUDGIE}@{commit}", "backgrounds/" + file, L_BUDGIE)


def pop(name, split, commit, file, author):
    return ("pop-" + name, split, f"{POP}@{commit}", "original/" + file, f"{L_POP}; {author} on Unsplash")


def kde(name, folder, size, lic, author):
    return ("kde-" + name, "train", f"{KDE}@{KDE_OLD}", f"{folder}/contents/images/{size}.jpg",
            f"{lic} (the wallpaper's metadata.desktop, X-KDE-PluginInfo-License), {author}")


def elementary(name, split, commit, file, lic, author):
    return ("elementary-" + name, split, f"{ELEMENTARY}@{commit}", file, f"{lic}; {author}")


def fedora(name, commit, file, lic, author, credits):
    """A photo of Fedora's extras; `credits` names the file (and commit) that
    gives its author and license: the release's Attribution-Extras, or for
    Fedora 26 the photo's own .desktop entry (X-KDE-PluginInfo-License)."""
    return ("fedora-" + name, "train", f"{FEDORA}@{commit}", "extras/" + file,
            f"{lic} (fedoradesign/backgrounds {credits}; license texts in the repository root), {author}")


SOLUS_COMMIT = "935b24ac299470d3aea8bddf8f4e3e969a9b1abd"


def solus(name, file, lic, author):
    return ("solus-" + name, "train", f"{SOLUS}@{SOLUS_COMMIT}", "backgrounds/" + file,
            f"{lic} (getsolus/artwork Attribution, commit 935b24a), {author}")


UBUNTU_COMMIT = "7549e8850bbfd8dc88373f8a748ab723b9d2447a"  # branch applied/ubuntu/devel: package 24.10.3


def ubuntu(name, file, author, lic=None):
    """A photo of Ubuntu's wallpaper package: lic is the license of the stanza of
    the package's debian/copyright that names the file; None for a file no stanza
    names, which its Files: * entry covers (CC-BY-SA-3.0)."""
    where = "per-file stanza" if lic else "Files: * (2010-2016 Ubuntu community contributors)"
    return ("ubuntu-" + name, "train", f"{UBUNTU}@{UBUNTU_COMMIT}", file,
            f"{lic or 'CC-BY-SA-3.0'} (ubuntu-wallpapers 24.10.3 debian/copyright, {where}), {author}")


# (name, split, origin, path, license): origin is a Debian package of PACKAGES or
# "OWNER/NAME@COMMIT" of REPOS. split: "train" or "heldout"; a held-out photo's
# source gives nothing to train (no crop, no other size).
SOURCES = [
    # --- lomiri-wallpapers-16.04: photos from the Ubuntu Touch wallpaper contest
    ("lomiri-bridge", "train", "lomiri-wallpapers-16.04", LW16 + "Bridge_by_Sander_Klootwijk.jpg",
     "CC-BY-SA-4.0, Sander Klootwijk 2018"),
    ("lomiri-dragonfly", "train", "lomiri-wallpapers-16.04", LW16 + "Dragonfly_by_Bolly.jpg",
     "CC-BY-SA-4.0, \"Bolly\" 2018"),
    ("lomiri-fig", "train", "lomiri-wallpapers-16.04", LW16 + "Picture_0B_by_freespace.jpg",
     "CC-BY-4.0, Trevor \"Freespace\" 2018"),
    ("lomiri-brushes", "heldout", "lomiri-wallpapers-16.04", LW16 + "Picture_1A_by_freespace.jpg",
     "CC-BY-4.0, Trevor \"Freespace\" 2018"),
    ("lomiri-wine", "train", "lomiri-wallpapers-16.04", LW16 + "Wine_by_Jakkub_Mede.jpg",
     "CC-BY-4.0, Jakub Mede 2018"),
    ("lomiri-aitzgorri", "train", "lomiri-wallpapers-16.04", LW16 + "aitzgorri_by_Aitzol_Berasategi.jpg",
     "CC-BY-4.0, Aitzol Berasategi 2018"),
    ("lomiri-lamp", "train", "lomiri-wallpapers-16.04", LW16 + "free_by_Peter_Nerlich.jpg",
     "CC-BY-SA-4.0, Peter Nerlich 2018"),
    ("lomiri-dogs", "heldout", "lomiri-wallpapers-16.04", LW16 + "friends_by_Aitzol_Berasategi.jpg",
     "CC-BY-4.0, Aitzol Berasategi 2018"),
    ("lomiri-clock", "train", "lomiri-wallpapers-16.04", LW16 + "greentock_by_Peter_Nerlich.jpg",
     "CC-BY-SA-4.0, Peter Nerlich 2018"),
    ("lomiri-creek", "train", "lomiri-wallpapers-16.04", LW16 + "life_by_Aitzol_Berasategi.jpg",
     "CC-BY-4.0, Aitzol Berasategi 2018"),
    ("lomiri-mountains", "heldout", "lomiri-wallpapers-16.04", LW16 + "picosdeeuropa_by_Aitzol_Berasategi.jpg",
     "CC-BY-4.0, Aitzol Berasategi 2018"),
    ("lomiri-dandelions", "train", "lomiri-wallpapers-16.04", LW16 + "seeding_by_Clements_Engelhardt.jpg",
     "CC0-1.0, Clemens Engelhardt 2018"),
    ("lomiri-sunset", "train", "lomiri-wallpapers-16.04", LW16 + "sunset_by_Aitzol_Berasategi.jpg",
     "CC-BY-4.0, Aitzol Berasategi 2018"),
    # --- lomiri-wallpapers-20.04
    ("lomiri-nuthatch", "heldout", "lomiri-wallpapers-20.04", LW16 + "Kleiber_by_Lukas_Baubkus.jpg",
     "CC-BY-SA-3.0, Lukas Baubkus 2021"),
    # --- mate-backgrounds, nature/
    ("mate-aqua", "train", "mate-backgrounds", MATE + "Aqua.jpg", L_MATE + ", Charles Barbin 2008"),
    ("mate-leaf", "train", "mate-backgrounds", MATE + "Blinds.jpg", L_MATE + ", Lennart Poettering, Andrea Cimitan 2008"),
    ("mate-dune", "train", "mate-backgrounds", MATE + "Dune.jpg", L_MATE + ", Marco Cogoni 2007, Hylke Bons 2008"),
    ("mate-freshflower", "train", "mate-backgrounds", MATE + "FreshFlower.jpg", L_MATE + ", Jens Ansorg 2005"),
    ("mate-garden", "train", "mate-backgrounds", MATE + "Garden.jpg", L_MATE + ", Charles Barbin 2008"),
    ("mate-meadow", "train", "mate-backgrounds", MATE + "GreenMeadow.jpg", L_MATE + ", Timothy Schellhase 2005, Lapo Calamandrei 2008"),
    ("mate-ladybird", "heldout", "mate-backgrounds", MATE + "LadyBird.jpg", L_MATE + ", Charles Barbin 2008"),
    ("mate-raindrops", "train", "mate-backgrounds", MATE + "RainDrops.jpg", L_MATE + ", \"blackcombwhistler07\" 2008"),
    ("mate-twowings", "train", "mate-backgrounds", MATE + "TwoWings.jpg", L_MATE + ", Charles Barbin, Hylke Bons 2008"),
    ("mate-wood", "train", "mate-backgrounds", MATE + "Wood.jpg", L_MATE + ", Jean-Francois Fortin Tam 2008"),
    ("mate-yellowflower", "train", "mate-backgrounds", MATE + "YellowFlower.jpg", L_MATE + ", Charles Barbin 2008"),
    # --- plasma-workspace-wallpapers (KDE), the photographic ones
    ("plasma-pier", "train", "plasma-workspace-wallpapers", PL + "ColdRipple/contents/images/2560x1600.jpg",
     L_PLASMA + ", Risto Saukonpaa"),
    ("plasma-cups", "heldout", "plasma-workspace-wallpapers", PL + "ColorfulCups/contents/images/2560x1600.jpg",
     L_PLASMA + ", Dmitri Popov"),
    ("plasma-lake", "train", "plasma-workspace-wallpapers", PL + "DarkestHour/contents/images/2560x1600.jpg",
     L_PLASMA + ", Risto Saukonpaa"),
    ("plasma-fallenleaf", "train", "plasma-workspace-wallpapers", PL + "FallenLeaf/contents/images/2560x1600.jpg",
     L_PLASMA + ", Martin Klapetek"),
    ("plasma-facade", "heldout", "plasma-workspace-wallpapers", PL + "Grey/contents/images/2560x1600.jpg",
     L_PLASMA + ", Sigi Sagi"),
    ("plasma-kite", "train", "plasma-workspace-wallpapers", PL + "Kite/contents/images/2560x1600.jpg",
     L_PLASMA + ", Risto Saukonpaa"),
    ("plasma-moss", "heldout", "plasma-workspace-wallpapers", PL + "OneStandsOut/contents/images/2560x1600.jpg",
     L_PLASMA + ", Risto Saukonpaa"),
    ("plasma-forest", "heldout", "plasma-workspace-wallpapers", PL + "Path/contents/images/2560x1600.jpg",
     L_PLASMA + ", Risto Saukonpaa"),
    ("plasma-dawn", "train", "plasma-workspace-wallpapers", PL + "summer_1am/contents/images/2560x1600.jpg",
     L_PLASMA + ", Risto Saukonpaa"),
    # --- python3-skimage, skimage/data
    ("skimage-brick", "train", "python3-skimage", SK + "brick.png", L_SKIMAGE_CC0T),
    ("skimage-grass", "train", "python3-skimage", SK + "grass.png", L_SKIMAGE_CC0T),
    ("skimage-gravel", "heldout", "python3-skimage", SK + "gravel.png", L_SKIMAGE_CC0T),
    ("skimage-coins", "train", "python3-skimage", SK + "coins.png",
     "no known copyright restrictions (Brooklyn Museum, per _fetchers.py); package BSD-3-Clause"),
    ("skimage-text", "train", "python3-skimage", SK + "text.png",
     "public domain (Wikipedia File:Corner.png, per _fetchers.py); package BSD-3-Clause"),
    ("skimage-astronaut", "heldout", "python3-skimage", SK + "astronaut.png",
     "public domain (NASA, per _fetchers.py); package BSD-3-Clause"),
    # the four photos of samples/: held out (the README shows them)
    ("skimage-chelsea", "heldout", "python3-skimage", SK + "chelsea.png",
     "CC0 by the photographer, Stefan van der Walt (per _fetchers.py); package BSD-3-Clause"),
    ("skimage-coffee", "heldout", "python3-skimage", SK + "coffee.png",
     "CC0 by the photographer, Rachel Michetti (per _fetchers.py); package BSD-3-Clause"),
    ("skimage-camera", "heldout", "python3-skimage", SK + "camera.png",
     "CC0 by the photographer, Lav Varshney (per _fetchers.py); package BSD-3-Clause"),
    ("skimage-rocket", "heldout", "python3-skimage", SK + "rocket.jpg",
     "public domain, SpaceX (per _fetchers.py); package BSD-3-Clause"),
    # --- python3-sklearn, sklearn/datasets/images
    ("sklearn-china", "heldout", "python3-sklearn", "/usr/lib/python3/dist-packages/sklearn/datasets/images/china.jpg",
     L_SKLEARN),
    ("sklearn-flower", "train", "python3-sklearn", "/usr/lib/python3/dist-packages/sklearn/datasets/images/flower.jpg",
     L_SKLEARN),
    # --- python-matplotlib-data
    ("matplotlib-hopper", "heldout", "python-matplotlib-data",
     "/usr/share/matplotlib/mpl-data/sample_data/grace_hopper.jpg",
     "matplotlib license (debian/copyright, Files: *); an official US Navy portrait of Grace Hopper, public domain"),
    # --- BuddiesOfBudgie/budgie-backgrounds (CC0): 31 of its 45 images in the
    # history are photographs (see README.md for the 14 left out)
    budgie("apollo-11-earth", "train", "d71f028a822f78064227b4b15a8590d98bfea8ec", "apollo-11-earth.jpg"),
    budgie("beacon-street-sunset", "train", "82067426f1dde366e9c9038fdbe457c2527525dd", "beacon-street-sunset.jpg"),
    budgie("blue-periwinkle", "train", "82067426f1dde366e9c9038fdbe457c2527525dd", "blue-periwinkle.jpg"),
    budgie("budgie-branch", "train", "fcb382c85ea7c4b191f216b3db4c0f51a2dee2d2", "budgie-branch.jpg"),
    budgie("canyon-wren", "heldout", "82067426f1dde366e9c9038fdbe457c2527525dd", "canyon-wren.jpg"),
    budgie("casa-mila", "train", "82067426f1dde366e9c9038fdbe457c2527525dd", "casa-mila.jpg"),
    budgie("cave-opening", "train", "d6f0cc58521db1dff323cadb9e453047ba3eab39", "cave-opening.jpg"),
    budgie("colorful-wall", "train", "efaa910dd6350cd0babfb1d42e8d5992bba1fe65", "colorful-wall.jpg"),
    budgie("dragonfly-on-lavender", "train", "d71f028a822f78064227b4b15a8590d98bfea8ec", "dragonfly-on-lavender.jpg"),
    budgie("extreme-desert-hike", "train", "82067426f1dde366e9c9038fdbe457c2527525dd", "extreme-desert-hike.jpg"),
    budgie("fragrant-chamomile", "train", "8a5ac073f2a012def5cc88e1b2dc22104ebcd472", "fragrant-chamomile.jpg"),
    budgie("high-trestle-trail", "train", "82067426f1dde366e9c9038fdbe457c2527525dd", "high-trestle-trail.jpg"),
    budgie("kitten-on-lawn", "train", "d71f028a822f78064227b4b15a8590d98bfea8ec", "kitten-on-lawn.jpg"),
    budgie("lake-sherburne", "train", "82067426f1dde366e9c9038fdbe457c2527525dd", "lake-sherburne.jpg"),
    budgie("midsummer-sunrise", "train", "1d6018c10b9b570a0f3ff23a43c5b9651a14d31e", "midsummer-sunrise.jpg"),
    budgie("motherboard-circuits", "heldout", "d71f028a822f78064227b4b15a8590d98bfea8ec", "motherboard-circuits.jpg"),
    budgie("noche-bogota", "train", "a2c417cd7fcde1a611edca8a9a12b908af287ae0", "noche-bogota.jpg"),
    budgie("oakland-zoo-otters", "heldout", "82067426f1dde366e9c9038fdbe457c2527525dd", "oakland-zoo-otters.jpg"),
    budgie("orange-hallway", "heldout", "d71f028a822f78064227b4b15a8590d98bfea8ec", "orange-hallway.jpg"),
    budgie("perched-osprey", "train", "82067426f1dde366e9c9038fdbe457c2527525dd", "perched-osprey.jpg"),
    budgie("piazza-gae-aulenti", "heldout", "82067426f1dde366e9c9038fdbe457c2527525dd", "piazza-gae-aulenti.jpg"),
    budgie("roman-colosseum", "heldout", "82067426f1dde366e9c9038fdbe457c2527525dd", "roman-colosseum.jpg"),
    budgie("san-francisco-skyline", "train", "3f0a0c1e48d1499adc2a773a3aa30633ef1330d7", "san-francisco-skyline.jpg"),
    budgie("singaporean-cityscape", "train", "82067426f1dde366e9c9038fdbe457c2527525dd", "singaporean-cityscape.jpg"),
    budgie("solaris-grapes", "heldout", "d71f028a822f78064227b4b15a8590d98bfea8ec", "solaris-grapes.jpg"),
    budgie("spiral-firework", "heldout", "d71f028a822f78064227b4b15a8590d98bfea8ec", "spiral-firework.jpg"),
    budgie("sunset-beach", "train", "58757f330b6f91a068f48052de6201078959136a", "sunset-beach.jpg"),
    budgie("taipei-city", "heldout", "538f8dbf36e5ba470c50cef2a20b2655c0a3f632", "taipei-city.jpg"),
    budgie("tea-gardens", "heldout", "82067426f1dde366e9c9038fdbe457c2527525dd", "tea-gardens.jpg"),
    budgie("the-spices-of-life", "heldout", "82067426f1dde366e9c9038fdbe457c2527525dd", "the-spices-of-life.jpg"),
    budgie("tunnel-zion-park", "train", "1c2fcc0d1a98cb08874d9abf3f61768af7354063", "tunnel-zion-park.jpg"),
    # --- pop-os/wallpapers: the Unsplash photos of the CC0 era (the numeric
    # Unsplash ids of 2016-2017); tony-webster-97532 is budgie's
    # high-trestle-trail (dropped as a duplicate)
    pop("star-trails", "train", "faff16d941928c0f384384b892357a6ed029d44c", "ahmadreza-sajadi-10140.jpg", "Ahmadreza Sajadi"),
    pop("ceiling", "train", "f49279e2bff9fe0f1e252f9b50129aa3b5534b6b", "ferdinand-stohr-149422.jpg", "Ferdinand Stohr"),
    pop("dish", "train", "e2b47e889d4ea5a45ebe43a9bd1fec7b209bde49", "galen-crout-175291.jpg", "Galen Crout"),
    pop("canyon", "train", "e2b47e889d4ea5a45ebe43a9bd1fec7b209bde49", "jad-limcaco-183877.jpg", "Jad Limcaco"),
    pop("dunes", "train", "e2b47e889d4ea5a45ebe43a9bd1fec7b209bde49", "jared-evans-119758.jpg", "Jared Evans"),
    pop("colorado-sign", "heldout", "e2b47e889d4ea5a45ebe43a9bd1fec7b209bde49", "kait-herzog-8242.jpg", "Kait Herzog"),
    pop("moon", "heldout", "e2b47e889d4ea5a45ebe43a9bd1fec7b209bde49", "nasa-45068.jpg", "NASA"),
    pop("earth-night", "train", "e2b47e889d4ea5a45ebe43a9bd1fec7b209bde49", "nasa-53884.jpg", "NASA"),
    pop("jellyfish", "train", "e2b47e889d4ea5a45ebe43a9bd1fec7b209bde49", "ng-32703.jpg", "NG"),
    pop("facade", "heldout", "e2b47e889d4ea5a45ebe43a9bd1fec7b209bde49", "samuel-zeller-337041.jpg", "Samuel Zeller"),
    pop("mountain-lake", "heldout", "e2b47e889d4ea5a45ebe43a9bd1fec7b209bde49", "sean-afnan-244576.jpg", "Sean Afnan"),
    pop("wire-shapes", "train", "e2b47e889d4ea5a45ebe43a9bd1fec7b209bde49", "sebastien-gabriel-232361.jpg", "Sebastien Gabriel"),
    pop("spacex-dragon", "train", "e2b47e889d4ea5a45ebe43a9bd1fec7b209bde49", "spacex-81773.jpg", "SpaceX"),
    # --- elementary/wallpapers: only the photos its debian/copyright (any
    # version) puts in the public domain / CC0 or under CC-BY-2.0; its
    # "Photo by SpaceX" is pop's spacex-81773 (the same Unsplash photo)
    elementary("antelope-canyon", "train", "f28b86144ba01d788ac61ad198ca16fa9477913f", "backgrounds/Ashim DSilva.jpg",
               L_ELEM_CC0, "Ashim D'Silva"),
    elementary("lantern", "heldout", "f28b86144ba01d788ac61ad198ca16fa9477913f", "backgrounds/Mr. Lee.jpg",
               L_ELEM_CC0, "Mr. Lee"),
    elementary("pier", "train", "f28b86144ba01d788ac61ad198ca16fa9477913f", "backgrounds/Sunset by the Pier.jpg",
               L_ELEM_CC0, "Sunset by the Pier (Unsplash ces8_Bo7bhQ)"),
    elementary("misty-forest", "train", "e9de543b5baf50877cb272949066c58e7b854dab", "backgrounds/Carmine De Fazio.jpg",
               L_ELEM_PD, "Carmine De Fazio"),
    elementary("jetty-water", "train", "4e65210469917e447298c94fbb1e712215171d6d", "backgrounds/Jonas Nilsson Lee.jpg",
               L_ELEM_PD, "Jonas Nilsson Lee"),
    elementary("conifer", "train", "58f43b8083c6384e15b4625febb5ab5c78f1bd3f", "backgrounds/Pablo Garcia Saldana.jpg",
               L_ELEM_PD, "Pablo Garcia Saldana"),
    elementary("cliff-coast", "train", "25bd0b102fb1ef2ba3341a0f318e1599db1bded1", "backgrounds/Rob Bye.jpg",
               L_ELEM_PD, "Rob Bye"),
    elementary("glacier", "train", "d35939109fb60ea1aaf56f85738834077d0bbd58", "backgrounds/Ryan Schroeder.jpg",
               L_ELEM_PD, "Ryan Schroeder"),
    elementary("vieste-coast", "train", "1d88437c9476541fbafaf80544016d46f4eee7ef", "Edoardo Brogiolo - Vieste Coast.jpg",
               L_ELEM_BY2, "Edoardo Brogiolo"),
    elementary("water-lily", "heldout", "fc2a33cebd9ec53f1b7bd116613c22edfb3e50c6", "Water Lily.jpg",
               L_ELEM_BY2, "TANAKA Juuyoh"),
    # --- KDE/plasma-workspace-wallpapers: the photographs of its history that
    # bookworm's plasma-workspace-wallpapers no longer has (its largest size;
    # Dance_of_the_Spirits and EventDay are renders)
    kde("alps", "Alps", "2560x1600", "LGPL-3", "Lukáš Karas"),
    kde("blue-flower", "BlueFlower", "2560x1600", "LGPL-3", "Sinisa Tatic"),
    kde("fog", "Fog", "2560x1600", "LGPL-3", "Sigi Sagi"),
    kde("forest-fog", "ForestFog", "2560x1600", "LGPL-3", "Alfred Deak"),
    kde("forest-house", "ForestHouse", "2560x1600", "LGPL-3", "Alfred Deak"),
    kde("heron", "GereatHeron", "2560x1600", "LGPL-3", "Alfred Deak"),
    kde("green-leaves", "Green_Leaves", "1920x1200", "GPL-2+", "Orlin R. Bertsch"),
    kde("indian-summer", "IndianSummer", "2560x1600", "LGPL-3", "Robert Fitsy"),
    kde("landmannalaugar", "Landmannalaugar", "2560x1600", "LGPL-3", "Pierre-Yves Dirand"),
    kde("poppy", "Poppy", "2560x1600", "LGPL-3", "Sinisa Tatic"),
    kde("spray", "Spray", "2560x1600", "LGPL-3", "Andreas Kainz"),
    kde("sunset", "Sunset", "2560x1600", "LGPL-3", "Lukáš Karas"),
    kde("tauplitz", "Tauplitz", "2560x1440", "LGPL-3", "Sinisa Tatic"),
    kde("walmendinger-horn", "WalmendingerHorn", "2560x1440", "LGPL-3", "Robert Fitsy"),
    kde("water", "Water", "2560x1600", "LGPL-3", "Andreas Kainz"),
    kde("whisker-grass", "Whisker_Grass", "1920x1200", "GPL-2+", "Orlin R. Bertsch"),
    # --- fedoradesign/backgrounds: the photos of Fedora 26-31's supplemental wallpapers
    # (read from the commits that still hold them; illustrations and the zen stones, which may
    # be rendered, left out). Training only: the held-out set stays as it was measured.
    fedora("blue-mystic", "1aacd09dafab12cf72e603f0a30964af7baa9ee5", "blue-mystic.jpg", "CC0-1.0", "Clyde He",
           "Attribution-Extras at 1aacd09"),
    fedora("bluerose", "9ed8feab439ae04b5d384e66cbb44bffee4cf11b", "bluerose.jpg", "CC0-1.0", "espasmo",
           "extras/bluerose.desktop at 9ed8fea"),
    fedora("cresent-moon", "a5136cd249f4a173022941400f08bce836113d90", "cresent-moon.png", "CC0-1.0", "rheslop",
           "Attribution-Extras at c494615"),
    fedora("galactic-mountains", "fc5d91c5007272a302d0081c85db5d8e72529e3d", "galactic-mountains.jpg", "Free-Art-1.3", "Juskteez Vu",
           "Attribution-Extras at fc5d91c"),
    fedora("grand-park", "fc5d91c5007272a302d0081c85db5d8e72529e3d", "grand-park.jpg", "CC-BY-SA-4.0", "Alec Isomin",
           "Attribution-Extras at fc5d91c"),
    fedora("great-oak-in-claremont", "1aacd09dafab12cf72e603f0a30964af7baa9ee5", "great-oak-in-claremont.jpg", "CC-BY-SA-4.0", "n8inup",
           "Attribution-Extras at 1aacd09"),
    fedora("stora-horredesjoen", "c4946156a1d47a26fe49ea78f2b9337998f876ac", "origin/jeena-stora-horredesjoen.jpg", "CC-BY-SA-4.0", "Jeena Paradies",
           "Attribution-Extras at c494615"),
    fedora("jelly", "fc5d91c5007272a302d0081c85db5d8e72529e3d", "jelly.jpg", "CC-BY-SA-4.0", "ikilledmypc",
           "Attribution-Extras at fc5d91c"),
    fedora("lonely-tree-in-kenya", "1aacd09dafab12cf72e603f0a30964af7baa9ee5", "lonely-tree-in-kenya.jpg", "CC-BY-SA-4.0", "lhirlimann",
           "Attribution-Extras at 1aacd09"),
    fedora("milky-way", "9ed8feab439ae04b5d384e66cbb44bffee4cf11b", "milky-way.jpg", "CC-BY-4.0", "European Southern Observatory",
           "extras/milky-way.desktop at 9ed8fea"),
    fedora("morning-at-sea", "fc5d91c5007272a302d0081c85db5d8e72529e3d", "morning-at-sea.jpg", "CC0-1.0", "Tapio Haaja",
           "Attribution-Extras at fc5d91c"),
    fedora("mountains-of-north-iran", "1aacd09dafab12cf72e603f0a30964af7baa9ee5", "mountains-of-north-iran.jpg", "CC-BY-SA-4.0", "ahalman",
           "Attribution-Extras at 1aacd09"),
    fedora("mushroom-family", "1aacd09dafab12cf72e603f0a30964af7baa9ee5", "mushroom-family.jpg", "CC-BY-SA-4.0", "ahalman",
           "Attribution-Extras at 1aacd09"),
    fedora("nature-mirror", "fc5d91c5007272a302d0081c85db5d8e72529e3d", "nature-mirror.jpg", "CC0-1.0", "dhanvi",
           "Attribution-Extras at fc5d91c"),
    fedora("phare-du-petit-minou", "fc5d91c5007272a302d0081c85db5d8e72529e3d", "phare-du-petit-minou.jpg", "CC0-1.0", "William Bout",
           "Attribution-Extras at fc5d91c"),
    fedora("pink-house", "1aacd09dafab12cf72e603f0a30964af7baa9ee5", "pink-house.jpg", "CC0-1.0", "Everaldo Coelho",
           "Attribution-Extras at 1aacd09"),
    fedora("purple-dream", "a5136cd249f4a173022941400f08bce836113d90", "purple-dream.jpg", "CC0-1.0", "gnokii",
           "Attribution-Extras at c494615"),
    fedora("raindrops", "9ed8feab439ae04b5d384e66cbb44bffee4cf11b", "raindrops.png", "CC-BY-SA-4.0", "zdenek",
           "extras/raindrops.desktop at 9ed8fea"),
    fedora("rajasthan", "9ed8feab439ae04b5d384e66cbb44bffee4cf11b", "rajasthan.png", "CC-BY-SA-4.0", "komcy",
           "extras/rajasthan.desktop at 9ed8fea"),
    fedora("serenity", "fc5d91c5007272a302d0081c85db5d8e72529e3d", "serenity.jpg", "CC-BY-SA-4.0", "bbarve",
           "Attribution-Extras at fc5d91c"),
    fedora("snow-on-balanced-rock", "1aacd09dafab12cf72e603f0a30964af7baa9ee5", "snow-on-balanced-rock.jpg", "CC-BY-SA-4.0", "n8inup",
           "Attribution-Extras at 1aacd09"),
    fedora("sunset-in-pennsylvania", "9ed8feab439ae04b5d384e66cbb44bffee4cf11b", "sunset-in-pennsylvania.jpg", "CC-BY-SA-4.0", "john252",
           "extras/sunset-in-pennsylvania.desktop at 9ed8fea"),
    fedora("sunset-on-skye", "1aacd09dafab12cf72e603f0a30964af7baa9ee5", "sunset-on-skye.jpg", "CC-BY-SA-4.0", "noe38330",
           "Attribution-Extras at 1aacd09"),
    fedora("swimming-penguin", "fc5d91c5007272a302d0081c85db5d8e72529e3d", "swimming-penguin.jpg", "CC-BY-SA-4.0", "Dirk Straube",
           "Attribution-Extras at fc5d91c"),
    fedora("sydney", "9ed8feab439ae04b5d384e66cbb44bffee4cf11b", "sydney.jpg", "CC-BY-SA-4.0", "potato8989",
           "extras/sydney.desktop at 9ed8fea"),
    fedora("the-mushrooms", "fc5d91c5007272a302d0081c85db5d8e72529e3d", "the-mushrooms.jpg", "CC-BY-SA-4.0", "Magdalena Irla",
           "Attribution-Extras at fc5d91c"),
    fedora("watt", "fc5d91c5007272a302d0081c85db5d8e72529e3d", "watt.jpg", "CC-BY-SA-4.0", "Dirk Straube",
           "Attribution-Extras at fc5d91c"),
    fedora("where-does-it-end", "a5136cd249f4a173022941400f08bce836113d90", "where-does-it-end?.jpg", "CC0-1.0", "gnokii",
           "Attribution-Extras at c494615"),
    # --- lxqt-themes: LXQt's wallpapers, the photos (its renders and logo images left out). Training only.
    ("lxqt-after-the-rain", "train", "lxqt-themes", LXQT + "after-the-rain.jpg", L_LXQT + ", stefonarch"),
    ("lxqt-appleflower", "train", "lxqt-themes", LXQT + "appleflower.png", L_LXQT + ", stefonarch"),
    ("lxqt-beam", "train", "lxqt-themes", LXQT + "beam.png", L_LXQT + ", stefonarch"),
    ("lxqt-butterfly", "train", "lxqt-themes", LXQT + "butterfly.png", L_LXQT + ", stefonarch"),
    ("lxqt-butterfly-wimer", "train", "lxqt-themes", LXQT + "Butterfly-Kenneth-Wimer.jpg", L_LXQT + ", Kenneth Wimer (the file's name; the License file's credits name no author for it)"),
    ("lxqt-cloud", "train", "lxqt-themes", LXQT + "cloud.png", L_LXQT + ", LXQt Project Team"),
    ("lxqt-drop", "train", "lxqt-themes", LXQT + "drop.png", L_LXQT + ", stefonarch"),
    ("lxqt-flowers", "train", "lxqt-themes", LXQT + "flowers.png", L_LXQT + ", stefonarch"),
    ("lxqt-fog", "train", "lxqt-themes", LXQT + "fog.jpg", L_LXQT + ", stefonarch"),
    ("lxqt-not-windows", "train", "lxqt-themes", LXQT + "this-is-not-windows.jpg", L_LXQT + ", stefonarch"),
    ("lxqt-valendas", "train", "lxqt-themes", LXQT + "Valendas.png", L_LXQT + ", LXQt Project Team"),
    # --- palapeli-data: the puzzles' photos, from Wikimedia Commons. Training only.
    ("palapeli-castle-maintenon", "train", "palapeli-data", PALAPELI + "castle-maintenon.jpg",
     "GFDL (.desktop: FDL) " + L_PALAPELI + ", Eric Pouhier, commons.wikimedia.org/wiki/Image:EPO_2432_wiki.jpg"),
    ("palapeli-cincinnati-bridge", "train", "palapeli-data", PALAPELI + "cincinnati-bridge.jpg",
     "public domain " + L_PALAPELI + ", Derek Jensen, commons.wikimedia.org/wiki/Image:Cincinnati-roebling-suspension-bridge.jpg"),
    ("palapeli-citrus-fruits", "train", "palapeli-data", PALAPELI + "citrus-fruits.jpg",
     "public domain " + L_PALAPELI + ", US Department of Agriculture, commons.wikimedia.org/wiki/Image:Citrus_fruits.jpg"),
    ("palapeli-honey-bee", "train", "palapeli-data", PALAPELI + "european-honey-bee.jpg",
     "public domain " + L_PALAPELI + ", John Severns, commons.wikimedia.org/wiki/Image:European_honey_bee_extracts_nectar.jpg"),
    ("palapeli-chameleon", "train", "palapeli-data", PALAPELI + "panther-chameleon-female.jpg",
     "GFDL (.desktop: GNU-FDL) " + L_PALAPELI + ", B. Navez and others, commons.wikimedia.org/wiki/Image:FurciferPardalisFemale.JPG"),
    # --- twinysam/ubuntu-wallpapers: Ubuntu's wallpaper package (contest photos of 9.10-24.04); architecture,
    # text, people, interiors and night lights (its renders, the Unsplash-licensed and Unsplash-sourced
    # files, one HDR-toned photo, and one whose author's name trips the test-set name guard left out).
    # Training only.
    ubuntu("cathedral-montreal", "Cathédrale_Marie-Rheine-du-Monde_by_Thierry_Pon.jpg", "Thierry Pon", "CC-BY-SA-2.0"),
    ubuntu("capucijnengang", "Capucijnengang_by_Artem_Kavalerov.jpg", "Artem Kavalerov", "CC-BY-SA-4.0"),
    ubuntu("tapiola-cultural-center", "Tapiola_Espoo_Cultural_Center_by_Agostino_Faedda.jpg", "Agostino Faedda", "CC-BY-SA-2.0"),
    ubuntu("hotel", "Hotel_by_sarcasmrules2011.jpg", "sarcasmrules2011"),
    ubuntu("building-corner", "xgu472hf2_by_lariliikala.jpg", "lariliikala"),
    ubuntu("grey-day", "Grey_day_by_Drew__.jpg", "Drew"),
    ubuntu("forbidden-city", "The_Forbidden_City_by_Daniel_Mathis.jpg", "Daniel Mathis"),
    ubuntu("night-lights", "Night_lights_by_Alberto_Salvia_Novella.jpg", "Alberto Salvia Novella", "CC-BY-SA-2.0"),
    ubuntu("larung-gar-night", "larung_gar_by_night_by_Geza_Radics.jpg", "Geza Radics", "CC0"),
    ubuntu("dybbolsbro-station", "Dybbølsbro_Station_by_SirPecanGum.jpg", "SirPecanGum"),
    ubuntu("langelinie-alle", "Langelinie_Allé_by_SirPecanGum.jpg", "SirPecanGum"),
    ubuntu("london-eye", "London_Eye_by_Paul_Daniell.jpg", "Paul Daniell", "CC0"),
    ubuntu("london-eye-beneath", "London_Eye_From_Beneath_by_Fernando_García.jpg", "Fernando García"),
    ubuntu("flower-gate-bridge", "Flower_Gate_Bridge_by_Michele_Agostini.jpg", "Michele Agostini", "CC-BY-SA-4.0"),
    ubuntu("gozo-door", "Wall_with_door_on_Gozo_by_Matthias_Niess.jpg", "Matthias Niess", "CC-BY-SA-2.0"),
    ubuntu("roof-tiles", "Roof_Tiles_by_Finn_Sturdy.jpg", "Finn Sturdy"),
    ubuntu("road-to-nowhere", "Road_to_Nowhere_by_Matt_Bailey.jpg", "Matt Bailey", "CC-BY-2.0"),
    ubuntu("blue-roof", "Blue_by_ElSlunko.jpg", "ElSlunko"),
    ubuntu("seebruecke-graal-mueritz", "Seebrücke_Graal-Müritz_by_Oliver_hb.jpg", "Oliver_hb", "CC-BY-2.0"),
    ubuntu("spices-athens", "Spices_in_Athens_by_Makis_Chourdakis.jpg", "Makis Chourdakis", "CC-BY-SA-2.0"),
    ubuntu("station-clock", "clock_by_Bernhard_Hanakam.jpg", "Bernhard Hanakam", "CC-BY-SA-2.0"),
    ubuntu("partitura", "Partitura_by_Vincijun.jpg", "Vincijun"),
    ubuntu("power-of-words", "Power_of_Words_by_Antonio_Litterio.jpg", "Antonio Litterio"),
    ubuntu("typewriter", "Brother_typewriter_by_awdean1.jpg", "awdean1"),
    ubuntu("light-reading", "Some_Light_Reading_by_Brandilyn_Carpenter.jpg", "Brandilyn Carpenter", "CC-BY-SA-2.0"),
    ubuntu("murales", "Murales_by_Jan_Bencini.jpg", "Jan Bencini"),
    ubuntu("signpost", "Signpost_by_maroubal2.jpg", "maroubal2"),
    ubuntu("euphoria", "Euphoria!_by_Tomasino.cz.jpg", "Tomáš Kijas"),
    ubuntu("frog", "Frog.jpg", "Jake Randell (AUTHORS)"),
    ubuntu("climbing", "Climbing.jpg", "David Andrie (AUTHORS)"),
    ubuntu("shoes", "Shoes.jpg", "Fotoloke (AUTHORS: 'Mi Old, Old Shoes')"),
    ubuntu("floorboards", "Floorboards_by_Dawid_Huczyński.jpg", "Dawid Huczyński"),
    ubuntu("cyclotron", "Cyclotron_by_cyclotron_beam.jpg", "cyclotron beam"),
    ubuntu("fairground-night", "Fairground_at_Night_by_martin.jpg", "martin", "CC-BY-SA-2.0"),
    ubuntu("espaciolandia", "Espaciolandia_by_Nando_uy.jpg", "Nando.uy", "CC-BY-SA-2.0"),
    ubuntu("christmas-lights", "Christmas_Lights_by_RaDu_GaLaN.jpg", "RaDu GaLaN"),
    ubuntu("kronach-leuchtet", "Kronach_leuchtet_2014_by_Brian_Fox.jpg", "Brian Fox"),
    ubuntu("warm-filament", "Warm_Filament_by_Eduardo_Battaglia.jpg", "Eduardo Battaglia", "CC-BY-SA-2.0"),
    ubuntu("music", "Music_by_tomasino.cz.jpg", "Tomáš Kijas"),
    ubuntu("headstock", "Headstock_by_Bernhard_Hanakam.jpg", "Bernhard Hanakam", "CC-BY-SA-2.0"),
    ubuntu("classic-guitar", "Classic_Guitar_Detail_by_Sten_Jørgen_Pettersen.jpg", "Sten Jørgen Pettersen", "CC-BY-SA-2.0"),
    # --- getsolus/artwork: Solus's wallpapers, photos from Wikimedia Commons and Flickr
    # (its digital art and tile patterns left out). Training only.
    solus("as08-16-2593", "AS08-16-2593.jpg", "public domain", "NASA"),
    solus("twigonometry", "Twigonometry.jpg", "CC-BY-4.0", "Alan Diggs (https://www.deviantart.com/schyken)"),
    solus("boats-on-the-river", "boats-on-the-river.jpg", "CC-BY-SA-4.0", "Rbrechko (https://commons.wikimedia.org/wiki/User:Rbrechko)"),
    solus("circumpolar-trails-sunset", "circumpolar-trails-sunset.jpg", "CC-BY-SA-4.0", "Antoine Lamielle (https://commons.wikimedia.org/wiki/User:0x010C)"),
    solus("komodo-dragon", "komodo-dragon.jpg", "CC-BY-SA-4.0", "Charles J. Sharp (https://www.sharpphotography.co.uk/)"),
    solus("lower-antelope-canyon", "lower-antelope-canyon.jpg", "CC-BY-SA-4.0", "King of Hearts (https://commons.wikimedia.org/wiki/User:King_of_Hearts)"),
    solus("matador-rocks", "matador-rocks.jpg", "CC-BY-SA-4.0", "Mica Semrick"),
    solus("mount-batok-java", "mount-batok-java.jpg", "CC-BY-SA-4.0", "Jakub Hałun (https://halun.pl/)"),
    solus("red-cherry-leaves", "red-cherry-leaves.jpg", "CC-BY-SA-4.0", "W.carter (https://flickr.com/photos/141281588@N05/)"),
    solus("rosa-kent", "rosa-kent.jpg", "CC-BY-SA-4.0", "Dominicus Johannes Bergsma (https://commons.wikimedia.org/wiki/User:Famberhorst)"),
    solus("sebkha-d-oran", "sebkha-d-oran.jpg", "CC-BY-SA-4.0", "Terki Hassaine Samir"),
    solus("vents-du-sud", "vents-du-sud.jpg", "CC-BY-4.0", "Christian Ferrer (https://flickr.com/photos/152043517@N06/)"),
    solus("wild-golden-eagle", "wild-golden-eagle.jpg", "CC-BY-SA-4.0", "Giles Laurent (https://gileslaurent.com/)"),
]

# SHA-256 of each source file, checked on every run (filled from the first
# build; a mismatch means the source changed and the output would too).
SOURCE_SHA256 = {
    "lomiri-bridge": "bd86b081f9975e2b83527f71e49b9271a8ab40885428395969d9f7d834d7f050",
    "lomiri-dragonfly": "af5af17841009732def24b09bb1e669a1b09d2b4bdeee7812c371101c30d2bb3",
    "lomiri-fig": "c8c0ab18e48d9e0419fe42881112137f3afafc27dfddc29ec3a6d54c56d225ad",
    "lomiri-brushes": "89e86af38d04daaef975665dc2127e9fa76f0fd68f4eea105a2d0ae3390b010b",
    "lomiri-wine": "d2e96e6d4da40dd804b3d0ce295e94de04a2d7d9b6785d42cd9d92ba58bced74",
    "lomiri-aitzgorri": "66268e7b48f8854d36a28765fac6e23ec1aee251daa6da1f64715f201020ad36",
    "lomiri-lamp": "85a5453c2fed514c75973016f3d862aca62eb7ca087618822469274ac1092373",
    "lomiri-dogs": "cc40e313c74e421edffe3403def413c16878ce14661cce7ec5915baeab35538d",
    "lomiri-clock": "e7b20e2db9dcd6e2b278ca55873c2110b35d89cd38b04d0b18728726888e6889",
    "lomiri-creek": "4c119350ead80201fe256850c3d316309ddfb4bdf10b235ce982dcde0c667c05",
    "lomiri-mountains": "414d0072b2f6f2c555deafeaef6e45c4fed6fa9ad26eba6560ca8803959cf97a",
    "lomiri-dandelions": "a5634d1ab5e41a3568e92d4a894a500c92b891f9ff734e50bd224d6e185a605f",
    "lomiri-sunset": "474dab6a4b9f94dc76c29dfe30e9f5db4af0fd2e33fe5d695f8152b371efca18",
    "lomiri-nuthatch": "6572410c09f4492c74ccadde133565a14c0161617d5917d4c820c66d65a44ba7",
    "mate-aqua": "5c30118205982da441bf7e6a1ada636a8a0be879408140b3148280c665ed6bce",
    "mate-leaf": "f7aac0dcc2e06d0491643e84df3da1d9db7c4610f58806a880d56e074799f600",
    "mate-dune": "8a67c2cb0be8c46b70c237311a4fa4d2b4ac7d39568135384787801fa5cc9a91",
    "mate-freshflower": "972b0a0c4e5e3fa93f4f244fc84bc64b121a5eac3aaa5856f1308c1f38a02f8e",
    "mate-garden": "d3095ee09d425ef23d27155412136cf14fc3c9af76ca58b452f55e23da324e78",
    "mate-meadow": "8fa0de0aa4089f7319c9fb7a6d006d4cab6023e8c8853731557cff53567b4832",
    "mate-ladybird": "e35a9a4126ef969c90b29c038058c5a575a20eadd84106a37bf1fa9931e7b61d",
    "mate-raindrops": "3e4ea9671c28c90a86cf67b3db9daf18c4741587c596333a7529ca589aaa0c16",
    "mate-twowings": "665e5abf8a5399070a91a9a8e455fe071e5b61697ff78fdeda4e9843ef545aeb",
    "mate-wood": "19c78500ac00a622e19907ab9cc7d06d46fe08c4a6142759a84195696150ec07",
    "mate-yellowflower": "254da96256acb7add685679775a04d1e4a5bc8cd13e5a5a3d61351ce198a5306",
    "plasma-pier": "05bef6722fc0ed81292cceb3ed026c38d17e510f3c84be7d68610c2b1a723c3f",
    "plasma-cups": "6e0f3a72feb5a4a9fec191b77e34874c3c69e2d93040deb3f07773e73385023d",
    "plasma-lake": "8e3703fae3a3c217b1fc2b399b706cd3720584268d071ba153e4809daa55f1ce",
    "plasma-fallenleaf": "95603a6560c7e8d50e0e03b3f4adbe39c5258c72528e74e4ecaea1daf4e499de",
    "plasma-facade": "88c31d8944b7e6935d1b9a296654c692f0772cb512491713eb30a972a604c0ed",
    "plasma-kite": "bdca288ce296a981e80659c021cf707caddc702c0c8d4247e60bd618476d47f8",
    "plasma-moss": "cb507baf1dafdcae362264f3aba9483ed4be5f6c9fdd770f0ec0920c6d9e80fd",
    "plasma-forest": "7477457d7f17b736259f1b021864778ad4ba802cf3214e6728181ff29126bba8",
    "plasma-dawn": "c868b50789591dd42910153c768053f1ba0a98cb36bbfc2b7a96a1045d0477f8",
    "skimage-brick": "7966caf324f6ba843118d98f7a07746d22f6a343430add0233eca5f6eaaa8fcf",
    "skimage-grass": "b6b6022426b38936c43a4ac09635cd78af074e90f42ffa8227ac8b7452d39f89",
    "skimage-gravel": "c48615b451bf1e606fbd72c0aa9f8cc0f068ab7111ef7d93bb9b0f2586440c12",
    "skimage-coins": "f8d773fc9cfa6f4d8e5942dc34d0a0788fcaed2a4fefbbed0aef5398d7ef4cba",
    "skimage-text": "bd84aa3a6e3c9887850d45d606c96b2e59433fbef50338570b63c319e668e6d1",
    "skimage-astronaut": "88431cd9653ccd539741b555fb0a46b61558b301d4110412b5bc28b5e3ea6cb5",
    "skimage-chelsea": "596aa1e7cb875eb79f437e310381d26b338a81c2da23439704a73c4651e8c4bb",
    "skimage-coffee": "cc02f8ca188b167c775a7101b5d767d1e71792cf762c33d6fa15a4599b5a8de7",
    "skimage-camera": "b0793d2adda0fa6ae899c03989482bff9a42d3d5690fc7e3648f2795d730c23a",
    "skimage-rocket": "c2dd0de7c538df8d111e479619b129464d0269d0ae5fd18ca91d33a7fdfea95c",
    "sklearn-china": "8378025ad2519d649d02e32bd98990db4ab572357d9f09841c2fbfbb4fefad29",
    "sklearn-flower": "a77f6ec41e353afdf8bdff2ea981b2955535d8d83294f8cfa49cf4e423dd5638",
    "matplotlib-hopper": "a8ca6d734765703b09728ab47fe59f473d93ae3967fc24c7c0288c3c7adb7130",
    "budgie-apollo-11-earth": "dd757459f981c3dca8b455af4a5d211fbf035a6f4e993b94170117b7040d9780",
    "budgie-beacon-street-sunset": "5e9ca463019146cf3f525b117348fbfdfef7e0a59a094f575c3fba69523e5a67",
    "budgie-blue-periwinkle": "312a76bf05affc7db4555127fd856d1387ebdd45f5d86b64cd2e6c428380b2e4",
    "budgie-budgie-branch": "39c857b552ecf1a52498acc129477f111d4265424eb58461b9ff925cc038fd05",
    "budgie-canyon-wren": "72e363a4fc3284e238e8405bfd038a91b2d2c14c4e9391e98496baab6ec46f4a",
    "budgie-casa-mila": "2fd00623841a22aec673eed8afd5d43c87d56171b26ae95f3436df8c0f22bf3f",
    "budgie-cave-opening": "bca556dbfbea9d4f5164a0b826051a2fd3de586ad29e204b5e0baf9189716d8e",
    "budgie-colorful-wall": "02dee502121d94795e6a7ebdf1fa3e9c7421c625663b095aa690f9f5b135c3b4",
    "budgie-dragonfly-on-lavender": "021ebeec65d9a7528891c48fdf0f493ec19510414cdf0419de9ba6ac3ada114a",
    "budgie-extreme-desert-hike": "dbf6fad925bc0f84059f9a77c3ebe5990371b0268eebe5d43a7f268bc4946c08",
    "budgie-fragrant-chamomile": "07a5a77f0424b82443f8ed1028657ef7c5739ac3deb578c69ae7d2cdf17b12cd",
    "budgie-high-trestle-trail": "d1687deb1239112b75a2d4a47ac1717cc15116c3b06d7237b61b551554e7b6b4",
    "budgie-kitten-on-lawn": "2ff32f39e1dfad2904d42e3920914921da8534802380f61e60d397f8c88fe48e",
    "budgie-lake-sherburne": "3328b2304962a173153e9e4c81a2bec3c24fb4ffa4b5af6aac0774dc89e1cb06",
    "budgie-midsummer-sunrise": "06403e93d5a4be8fc3e52376454ca36d2f5054238f3cc3cf0cf28b7512daade7",
    "budgie-motherboard-circuits": "8e4ccff571da0f07f956022d69c3e2088368ae3c6b9240ef9f9bda2d3fe79f3b",
    "budgie-noche-bogota": "75423e19e49f6e44883a3579e30187a3ce378f499599b49426e3f1eab1012902",
    "budgie-oakland-zoo-otters": "9e98f21823674735b79a030632008a9229eed93ffbd0c4844263397f64fba24a",
    "budgie-orange-hallway": "3385f07e77a0936b522cdf026ab2b012a8996bbaf34d2e0186fb08cec5504a6f",
    "budgie-perched-osprey": "588cf665d3b152be3cbca439a680aa06df43e573d1c2ed6aedc432a6684fd9a9",
    "budgie-piazza-gae-aulenti": "b3121c9e8b4921d84cded6b63a2d1c5868b96af802cc11810ec61a8b6416f684",
    "budgie-roman-colosseum": "4995228348caa1e905c455d4ad5023869e76ac35564c766372060bcf96de1ea1",
    "budgie-san-francisco-skyline": "420542dd4669dcf0b8f149670f9c7fba2e507173204478dce994cd8d1b6712dd",
    "budgie-singaporean-cityscape": "5c7c5912eb5443231e61d85d17465b714fce43f19084c68a87a1a04543414fb3",
    "budgie-solaris-grapes": "c146dbefff40e9d7f8243df370c71d9d8ccf12c2e4ec6a884279fca9b46ccf8b",
    "budgie-spiral-firework": "87d1eb8ff0d721616a2af4cc4a4364446ded961d18a3677d7194c2b5912e1a88",
    "budgie-sunset-beach": "8c4c390a1c8dda60528be59e3252af04fa9c178171e46fddf2bff9d21f5038a3",
    "budgie-taipei-city": "81a0db1c47decd00d57a540acc1cf5b6412faf245b022f32a32c350a12e254f5",
    "budgie-tea-gardens": "85eeef1f155d97fa6350b610df3297aae0508c8c51387a6193f3330b03825597",
    "budgie-the-spices-of-life": "c0ee71e79b11e7794cd81f4b384f58866ef552f03d1a7ee67a8d4cc151890976",
    "budgie-tunnel-zion-park": "20935928b1a03e208fd155733bfc31c863fd797101e911e4d1a7ad041332920c",
    "pop-star-trails": "779c4f5254ae4134c8fdc06993348e4547fe74772f93f9b12f11cd519594e86d",
    "pop-ceiling": "9b2d5b4c8947597b2537664411dc22848b7153f9ab78d30f6e23a920007e043b",
    "pop-dish": "498a22bca8f7b83f4aecc874975948912c7ddee076dd2fe3fe74ffa2b942f481",
    "pop-canyon": "e21ab14095b67545c6d85847084a6fcd8487b7b5fdc539bcbfd7528c5e24c1f9",
    "pop-dunes": "e598152fcaf25d87146f33a4c998695f4025349df8866f30fe9b1a7770b34484",
    "pop-colorado-sign": "d84fe9ae28db69cae2b060a46f92b4f7b602d5e55e86af7b2342a8635a5f9c9f",
    "pop-moon": "d42066cebbc222d61e4d5587e02bc8fd21755e539ad9e86d50f5c184591af92a",
    "pop-earth-night": "53ed4645ec6fc4c8f1010de268f60ce6a46bdacf9bb6e0e51b7f0e17a5e7b318",
    "pop-jellyfish": "635c2be1c524be973795d0ff4789ef91e5abdbd85f83ec312238a19d929a2b2d",
    "pop-facade": "b4662ff39e657d10e0cc67be3f929ca892e8778952cf95e90b3a9e4715c3048d",
    "pop-mountain-lake": "86f0e7c4e33ca843ccc5efb5b1d59d49e982b6703d4e0fc07b309b1c930f7346",
    "pop-wire-shapes": "695f81159737cbfcee4861c1342641e8955e307435090342e7b129465df881f6",
    "pop-spacex-dragon": "98787812ae097935fcceff83c3d8d7adc39ee81fb00fefbb3824699f04ac0ce9",
    "elementary-antelope-canyon": "bf2fdee8ddab837f0d978801d451ebf5e6f9d82461af0ece37a28051d4a406c0",
    "elementary-lantern": "6796ce736bcb92e18ede68efaa743412e1208018c1823ba8b6309c34167260df",
    "elementary-pier": "b13f5a16af1cecb399a1c533b00a4fc935a3e8ce80b2b34ed435eadb3f1b9481",
    "elementary-misty-forest": "a83044c1e65c110825bf2d56cc69bc708f7ac7815472a2cf329f9a474e30cda1",
    "elementary-jetty-water": "e0ab1136282ee6ef366d79a6013fc80c80d504d790096e404a832f68d303b894",
    "elementary-conifer": "18caf7202cf62d5ed104a5e6638b8095fc6fcd30167048958b71f9342b9cc9ad",
    "elementary-cliff-coast": "ff4b0650dcb9a84157a87fe5b4fba0d9766ce04976b32f7a8ee105126e3127e9",
    "elementary-glacier": "b850060237404725cf11b87fa2a86fbd5ef56334200b3b800e83d025c56e0734",
    "elementary-vieste-coast": "f74a5c1ee679cf5aadf04bd22812b4a830aba5788643482ebe295b9cf00391d4",
    "elementary-water-lily": "8392e75e9850c7ff867563a42b06acd75e56d7405fb8d659737e1013c3feef79",
    "kde-alps": "e7c022170cef3a0339bba4c672badcc4033474c03a4cd6a44197b88158609381",
    "kde-blue-flower": "1f0011e0436cbf385b73f32ef70249c84c2ce4432af4f5904f4bfc86935d936a",
    "kde-fog": "5b7882e68afb629fde1c3f734c6410a9aae9022ef584d40bb374ab022fc19009",
    "kde-forest-fog": "a3b7293a991f50ae2910ae09910f427720f012f57c7f1e76afaf6b108b10d90b",
    "kde-forest-house": "c0196c6d145dad59a5d3edf9a72e337d22c3aad9d1c975a006a92bba76c9bf64",
    "kde-heron": "067da9ee048ad9e3b083f1af18ac327498a9e817880cd251b4fd4a2b39f4f0d8",
    "kde-green-leaves": "7423bf9fd52f631f4b2f8c4a56fbf51f57b3b241702e7e07374814b9569c8de1",
    "kde-indian-summer": "e5b64a673023d8bd2b612b75863646a37ce36cee92305243085959371a50488d",
    "kde-landmannalaugar": "c4e72f397324ed231a4e4b0c5ca4361d9f23860a9854bb35a2a78f801d716ec2",
    "kde-poppy": "bc29968be3ea989d7520bae0e2ed8b5869679976cb469da3a74df0694533eca5",
    "kde-spray": "db13ea132d70dafcbd6c7fe5c756e7538701d3df0a84bc2f7eba8d894fcddcc1",
    "kde-sunset": "254d2a8a65d5fbc4e9f0f39b02d5055e0a63b3581ae6df4cea8e692ffdb3bfb4",
    "kde-tauplitz": "cbb795559b34225cbbd0aa5fac2599f26bff30562fa1cc47d24d881172d755ae",
    "kde-walmendinger-horn": "c5fcdf2cc84a785a5a99272839f85c5435038bc2509948538d131c377dbea816",
    "kde-water": "8dc1b72294ae7a2d7fb513a7ced25717db5fee93c12aa709835146b469e78073",
    "kde-whisker-grass": "fe6cb814844d12b8d43bcc4180c32b83fa77a30bd5df6bb070d39ce933f7985b",
    "fedora-blue-mystic": "3ca73ff99483fe686ad3da00dae3fdb323f7f41e2f29379ad8192650c5948bf2",
    "fedora-bluerose": "1678838d0cf3727ff974f208382e42dfc3f4d5779397a67c3666471b2d6dae25",
    "fedora-cresent-moon": "a0369e50fab747b358d1baf155c84675d7fab4fb169e8ebb1c8a13486ef2f6ea",
    "fedora-galactic-mountains": "29e86fd5ff5af8b65eac51f55d705e0fb5d040372f14d96d141be4f3d1cc4476",
    "fedora-grand-park": "2413b7be7877bc61c24e097ef4836626e7e4bed70ec6332083f871cbdf5b456b",
    "fedora-great-oak-in-claremont": "9f78b1d51823f696e80e0d318481e42db9c9238394f42d22cc655ff0ed76b8b8",
    "fedora-stora-horredesjoen": "293ca1a955bccc63a3ab213343b310066b52321ca8bf521de76f3cc2a93362ea",
    "fedora-jelly": "fabf0bbbce135a08abc7c5212d321720da4bec1f7171c4f83abe88e948b9e90d",
    "fedora-lonely-tree-in-kenya": "9d9d31144436681446c230bbcb2568681c739ab8c6386b5542aca7f2877d4a20",
    "fedora-milky-way": "469da6db7acb094ffcc84d1d7d291d68263a9ed15f5e5affd4e271dddb4be55d",
    "fedora-morning-at-sea": "2937112796b2d4b1fe141d6fa35a1e02af6d0fd897c185b0f765da2716114f5b",
    "fedora-mountains-of-north-iran": "8b6deeb25b79f712c54302d863f78c1d08c5045030331137eb555956c7ac5e0a",
    "fedora-mushroom-family": "fce8fad5504f7e53526f9d19ca72d7729028876592da240490fdbf24bbc51d6e",
    "fedora-nature-mirror": "d6460ae6654442f6901448cb1f2c5d7873652e4f4b2b02060b7ea34b82eb768d",
    "fedora-phare-du-petit-minou": "d4f9e0187bb544fbc95139fc4aeed28e002638fdff7ac6c08a539e3d09d8eeec",
    "fedora-pink-house": "ab69673053362feb43904c12169e09dc3472da0fc738b2024bc764409fc91cfd",
    "fedora-purple-dream": "ad67f74714be44f78c53aae7f9cd134f3b48b7d8a9f3571729abb92cc4b60278",
    "fedora-raindrops": "3ab6bc991f7d939e78d7d851a887059c6864dea3d0a3c96c8fed3aba947e9187",
    "fedora-rajasthan": "2f45e6eea979a88bb146200f3e629b0dd6490f6c07c2f7bafa41bfdd2989cada",
    "fedora-serenity": "5dd7dc76311754501855a8eb2f2285992500c97f17f688667cdee0220db207b4",
    "fedora-snow-on-balanced-rock": "df7dc9fa57b723c7be6af533ae1e6f281d3713c2fe81e9e36868b91553ab513a",
    "fedora-sunset-in-pennsylvania": "9d15872ac1d7d02a1e3b847c14023f06f1f4343f059652e42f454ba35aace720",
    "fedora-sunset-on-skye": "4643acf6fac1936a735dc26884c5aef10f17a02f744107b0fee323327e67dda6",
    "fedora-swimming-penguin": "fd190b212dc02a5823aaacbebbd00eebd1d227949c3e2be2a41ace102c2e947e",
    "fedora-sydney": "aa09783b8c03087d513267b08759c5b9413854dc74f99c6186ea58c689402c1c",
    "fedora-the-mushrooms": "2dc90f5a8b251214cad0704608b630176b90d012a16e2e4ca4a434356210de3c",
    "fedora-watt": "e7f1228c120b2ea27c4e062407e57f3c9ee4b349dd034f7d93dadbc0234762e4",
    "fedora-where-does-it-end": "6f40a9f9dd052693e43a75bda92656526866cf36331fa32013624d4d31dc990d",
    "solus-as08-16-2593": "fba41cbbeee629aa15f977a124c17ef4a7e1de1e83ae37e576364f991953a15a",
    "solus-twigonometry": "07222c02547f69cddf98e846a9ec5ab0e4a4bb791b0cb488fe5d4784969a3495",
    "solus-boats-on-the-river": "3f817cfaf27d318332e98e0d298fa0ea5be3bad7bb09a2e2ba402fb60c537b07",
    "solus-circumpolar-trails-sunset": "fcf8c3c08a68e87b1d0c8b69b8c7f73addad53f45630dbc69fcd117810f1a131",
    "solus-komodo-dragon": "a33988a05cf921a0f1805b4d0c369f4fbcf997ef328eebfb68d7ee44efd35f66",
    "solus-lower-antelope-canyon": "bab711e25de50e0ce86b1f5ac90671411d7187573b94464473604faf207e4b34",
    "solus-matador-rocks": "de716689e05c00623a6fa5e097da7076ea544f9904375539ffd58544aaf62e26",
    "solus-mount-batok-java": "a90aae899f53399540f4e4e1332957e47d1110b33c540f060a4938a54536549a",
    "solus-red-cherry-leaves": "800090a875e832ed7dac6fed606d00670e2f3a08fb757c13fc7b29ff28b1885a",
    "solus-rosa-kent": "0af506643ae42db92059d5702ef7e539cd5847c580a08a28dcc0d874b83deb80",
    "solus-sebkha-d-oran": "89e21f85f39c78d5103f8745f0f912bb40cd9a8c8a163c3200d12ec18c6fa776",
    "solus-vents-du-sud": "43de38ae68ecea971353be165c4d29ef9ebe8d8b67d937b707b3d6b68d0e0aee",
    "solus-wild-golden-eagle": "d06d12a639163b2e0de2fcefece4455d93497066466b2800902555b0db348b99",
    "lxqt-after-the-rain": "e6cb8b3e09b904cc493ff17fddcd564d4e46a1761d05adf972c285a1fd878234",
    "lxqt-appleflower": "bae8a8eb8274b29509f1cbbfe250081331c5704a1fea25d5052166a0451e67f3",
    "lxqt-beam": "3d199194b048cb793c0ad558337cda3e16f14cd054168d1d813620e24a0a5659",
    "lxqt-butterfly": "13175434d99075e075de7321942e66169e3c99ac9416024dcf4123bd3b38749c",
    "lxqt-butterfly-wimer": "c237c26f6f0b18db3afa62a0eff13cb8208b79a1ef35aaadcb745d8f9faef146",
    "lxqt-cloud": "522dbf79dfaff751cf8ef2f337c9d196a231fa096bc38806a76ce048b8c7b5a2",
    "lxqt-drop": "3b726aea9a6f8af36431c6f1974f982f7f4c5a4443499500bda31be27e4ffde8",
    "lxqt-flowers": "3a935d8be4d6c9784f9079ff2814acd2de2c8406e9fe584be03e90264f37c371",
    "lxqt-fog": "a8235344ee6b5ab1b6de3ccef731bcc0e6509cf33ce832db87eae1eb75987083",
    "lxqt-not-windows": "2d885e0438c0ab244f818d33d8f745a1cc486558462faf9bf3948675c68ac227",
    "lxqt-valendas": "f2d275c51d116942cea8e7d80d30c7d3c130349a0695caf2aa235f926ae15759",
    "palapeli-castle-maintenon": "f4a6bf48b97d97715413f9ebd2d8744bd46df0e492bc8326e2513d51084f2612",
    "palapeli-cincinnati-bridge": "09772d09318b34a5c5edd58ee86ff462bcd2907006f31cc8e0704310f8e9ab60",
    "palapeli-citrus-fruits": "0cbd7154a14789803167c86705130d0358875198231269df168ea26224e70848",
    "palapeli-honey-bee": "9d54ae706bddd899c91b2b801d9ca4556a5a9a399b4043f9d539df62a8cb7f27",
    "palapeli-chameleon": "adb9e2834a8a3db40ca3817452b956ada527085e5aa2bd604c465651a3834ae4",
    "ubuntu-cathedral-montreal": "2eced50e6aba4032806b39016511997aa5ab23bc897a6265af1bd078aa0e5ee4",
    "ubuntu-capucijnengang": "2f7557665e0a00a43b3b14d01672f0c68a337aa737701ab3d8e28ee8c002240a",
    "ubuntu-tapiola-cultural-center": "8a31633d0d801eece115f176a2d21753f7e5427cda2bd21c55a2853299aae20c",
    "ubuntu-hotel": "9676ab6241ccbaa25b89179623f97057bc776ae1770ec7f52778a46279ef0954",
    "ubuntu-building-corner": "ab83b7ef45b783994c5fdbe75e54297ae4a9a33edcfc4fc8bd26a13e7a9ad928",
    "ubuntu-grey-day": "d97202b1aa19283784945a0f622557a72733fe23bf89bdbe69ac06a0a7d7abb0",
    "ubuntu-forbidden-city": "4589541a717071c8a183be03c686d320ad345f94508ce3ca68f2ac04e9702d03",
    "ubuntu-night-lights": "c5dd4d509059f39f82881506671fccf7399e4e2d998a087c9150056385b5b4d1",
    "ubuntu-larung-gar-night": "718f3d69cfa0fec5efc11883e10d4744ef3cd34250beedfd06e1d1c0e565394c",
    "ubuntu-dybbolsbro-station": "59c631370c2e9f14a488e16aad110042fc092c67b82e38aa75edc3879339d770",
    "ubuntu-langelinie-alle": "f423c9479ba0f4ecbff053eb13e41906a3750bd6ecd318120746ef06100d128b",
    "ubuntu-london-eye": "611bda1dc78bda83f8cfde940a0c37acbb49af963f04435cfa2b3129d06984f2",
    "ubuntu-london-eye-beneath": "4c0eb8c804faecb10e33c6dc4821169b20e2b15453f9aa05333deda0dd106f49",
    "ubuntu-flower-gate-bridge": "63f4a590df49b8cb108cf5b169ea5d6c00b18e25c057845a8df614f95f95db2a",
    "ubuntu-gozo-door": "0e7c2c751e856ba0ddca4a2d45039ccafa6d4497c6b712d43250c33f90e07004",
    "ubuntu-roof-tiles": "71eb4ba3d315b3ab37501ba80d09b4f720a3d84b66fdb7f5ecde05ef0868acbe",
    "ubuntu-road-to-nowhere": "8b496abded235fe699a1b3a57af8ae38f43dbd7171f835615a51a607787a66ed",
    "ubuntu-blue-roof": "f8e202150244362a9501b61f7abc27c39a53b5d801415b09aef4a7d16992645c",
    "ubuntu-seebruecke-graal-mueritz": "b88952b588ecc0895970cc7e076fc6305fe9c56a8689c1edfb6c530dcbe6a601",
    "ubuntu-spices-athens": "3d971c9a4ad144c961c402b572a51a90c6885c6ccd99dd95944a9d87a2c339b3",
    "ubuntu-station-clock": "4a9b7cae3a9427ba9893e0fc8b9c19a6320297b2c03381725f36f32dbcf8d22a",
    "ubuntu-partitura": "824381e8bfb90d74cfbb60b8deb0b75d8daf75ccbd8d96ee79136e716247d482",
    "ubuntu-power-of-words": "a628dd8db5712a695a2c7203ac0432c2de74a94a52a1031734f16a23b0f63019",
    "ubuntu-typewriter": "fb83a7f2d1f4cb14337dcd0f588f1e665a27b66d92ff4c13befd937b10fc26ed",
    "ubuntu-light-reading": "f9118f8d7e52c1da30f0bf5e258f3033923b675a84c321da5230b4bb5ca3091d",
    "ubuntu-murales": "b54c50c35e3518e70a512dce2eac8f88a4b55fdf278fd1aecc8ff0faa2b2fe64",
    "ubuntu-signpost": "8dfffb8f70d907b677e12af6b7e5ccf039e2e03bcc7b4efaea43db66d029eae9",
    "ubuntu-euphoria": "6e81947700fd988079eb2994273e1ecf14b544b05e957c6c4a81762162955e60",
    "ubuntu-frog": "93fe0a4b44f7ceda80ce04b582c667021ba1f97d91af00b350b1a2cc07d1f018",
    "ubuntu-climbing": "916e3dfc19978a39204ccae55f06e1ec7ffa45e65a3613eab52d282f9c093f55",
    "ubuntu-shoes": "39c1f22f88f6a0bf5a9edf4605bf689117fb261e7b8cc1501d0b87a5cb78c6f6",
    "ubuntu-floorboards": "82b722e82b310e4011a33c89a347f919f0b36be595d507ad7810890a6da5ab6d",
    "ubuntu-cyclotron": "b5661c758a50073abbc7d8a1790797dfed0deb15ea137a31ceea5ed95afca018",
    "ubuntu-fairground-night": "0c77a5bf34eb9cb67e2575c971d61ce0379d00e9ce8e59a52bc22b78423a78a0",
    "ubuntu-espaciolandia": "9f37de6c3f68af7ffa6eb620d1aa44626f2ffe88f942a29995093ba39e5a369e",
    "ubuntu-christmas-lights": "0e46486e36312a3e6577881f0b383b81b34927c38e95ec96c8d6a1fe64570806",
    "ubuntu-kronach-leuchtet": "abf082aa506db8a367199cf10f1439314656fb1a51c57f46ef2d8fd9dbe90a29",
    "ubuntu-warm-filament": "006f6359b966fc0cfaa6aba02cae35b8a6b29b331dc2f3c7518f87fc0f61645d",
    "ubuntu-music": "1b24b31a7228174a1ce8be43f7315b7c7c516d528d5943ea13205665a53c3730",
    "ubuntu-headstock": "fceaae4411a907c629d83d56c3b913ff4e03e7d026fb628abfb80e80755783e2",
    "ubuntu-classic-guitar": "b7da7e7338251010d8c28a741a2ef544aa20cb0d4adfa2148964511e87db4a8b",
}


# Target sizes, drawn per photo from a fixed seed. Sources whose long side is
# at most NATIVE_MAX are kept at their own size (no resampling). Larger
# training sources are downscaled by exactly TRAIN_FACTOR, held-out ones to a
# long side in HELDOUT_LONG but by at least MIN_FACTOR: downscaling by 2 or
# more averages away JPEG artifacts, chroma subsampling and sensor noise.
TRAIN_FACTOR = 2.0
HELDOUT_LONG = (800, 1100)
NATIVE_MAX = 1000
MIN_FACTOR = 2.0
SEED = 20240611
# Downscaling by >= 2 leaves training photos cleaner and smoother at the pixel
# level than photos straight from a camera: a denoiser trained only on them
# takes fine grain and texture for noise and smooths it away (seen: -3 dB
# against a bilateral filter on sklearn-china). So each large training source
# also gives NATIVE_CROP-square crops at a scale of 1/1 .. 1/NATIVE_MAX_FACTOR
# (drawn per photo), one per NATIVE_MP_PER_CROP megapixels of the source
# (at least 1, at most NATIVE_MAX_CROPS), at distinct cells of a grid, stored
# as NAME@nativeK.png. Only sources that are not JPEGs or whose JPEG quality
# (estimated from the luma quantization table) is at least NATIVE_MIN_QUALITY
# give crops: at native scale a JPEG's block artifacts are still there, and
# below about 84 (the quality of the lomiri and mate sources the first set
# took its crops from) they are plain to see in smooth areas.
NATIVE_CROP = 512
NATIVE_MAX_FACTOR = 1.5
NATIVE_MP_PER_CROP = 0.5
NATIVE_MAX_CROPS = 20
NATIVE_MIN_QUALITY = 84
# The IJG (libjpeg) luma quantization table at quality 50, natural order.
IJG_LUMA = np.array([16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56,
                     14, 17, 22, 29, 51, 87, 80, 62, 18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113,
                     92, 49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99], dtype=np.float64)
PNG_LEVEL = 6  # zlib level of the stored PNGs (the pixels, not the bytes, are what matters)

# Names and sizes of the literature's test sets: a source that matches one is
# refused (the sets are the independent measure; none is used here).
TEST_SET_NAMES = re.compile(
    r"kodim|kodak|bsds|cbsd|bsd68|mcmaster|live1|set12|urban100|classic5|sidd|\bdnd\b|rni15|polyu|"
    r"lena|lenna|peppers|baboon|mandrill|barbara|monarch|starfish|cameraman|opencv", re.I)
TEST_SET_SIZES = {(768, 512), (512, 768), (481, 321), (321, 481), (500, 500), (256, 256)}
# Two sources whose 32x32 gray thumbnails correlate above this (and whose
# aspect ratios agree within 3%) are the same photo: the build stops.
DUPLICATE_CORRELATION = 0.95


def log(*a):
    print(*a, flush=True)


def sha256_bytes(b):
    return hashlib.sha256(b).hexdigest()


def seeded_rng(*parts):
    key = ":".join(str(p) for p in (SEED,) + parts)
    return np.random.default_rng(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "little"))


def is_repo(origin):
    return "@" in origin and origin.split("@")[0] in REPOS


def origin_label(origin):
    """The manifest's source column: PKG=VERSION or OWNER/NAME@COMMIT."""
    return origin if is_repo(origin) else f"{origin}={PACKAGES[origin]}"


def fetch_deb(pkg, ver):
    """Return the path of the cached .deb for pkg=ver, downloading it if needed."""
    os.makedirs(CACHE, exist_ok=True)
    fname_ver = ver.replace(":", "%3a")
    for f in sorted(os.listdir(CACHE)):
        if f.startswith(pkg + "_" + fname_ver + "_") and f.endswith(".deb"):
            return os.path.join(CACHE, f), False
    subprocess.run(["apt-get", "download", f"{pkg}={ver}"], cwd=CACHE, check=True,
                   stdout=subprocess.DEVNULL)
    for f in sorted(os.listdir(CACHE)):
        if f.startswith(pkg + "_" + fname_ver + "_") and f.endswith(".deb"):
            return os.path.join(CACHE, f), True
    sys.exit(f"apt-get download {pkg}={ver} gave no .deb in {CACHE}")


def repo_dir(repo, overrides):
    d = overrides.get(repo) or os.path.join(REPO_CACHE, repo.replace("/", "+") + ".git")
    if not os.path.isdir(d):
        sys.exit(f"{repo}: no git copy at {d}; make one with\n"
                 f"    git clone --mirror https://github.com/{repo} {d}\n"
                 f"or name another with --repo {repo}=GITDIR")
    return d


def read_repo_file(gitdir, repo, commit, path):
    r = subprocess.run(["git", "--git-dir", gitdir, "cat-file", "blob", f"{commit}:{path}"],
                       capture_output=True)
    if r.returncode != 0 or not r.stdout:
        sys.exit(f"{repo}@{commit}:{path}: not readable from {gitdir} "
                 f"({r.stderr.decode(errors='replace').strip() or 'empty'}); a shallow or partial "
                 f"clone lacks old commits: use git clone --mirror")
    return r.stdout


def target_long(name, split, long_side):
    """The stored long side for a source of long side `long_side`."""
    if long_side <= NATIVE_MAX:
        return long_side
    if split == "train":
        return int(round(long_side / TRAIN_FACTOR))
    lo, hi = HELDOUT_LONG
    t = int(seeded_rng(name).integers(lo, hi + 1))
    return int(min(t, long_side / MIN_FACTOR))


def jpeg_quality(im):
    """The IJG quality whose luma table is closest on average to the file's (100
    for a file that is not a JPEG). Other encoders' tables have other shapes, so
    this is an estimate, good to a few quality points."""
    tables = getattr(im, "quantization", None)
    if im.format != "JPEG" or not tables:
        return 100.0
    scale = float(np.mean(np.asarray(tables[0], dtype=np.float64) / IJG_LUMA) * 100.0)
    return (200.0 - scale) / 2.0 if scale <= 100.0 else 5000.0 / scale


def decode(name, data):
    im = Image.open(io.BytesIO(data))
    quality = jpeg_quality(im)
    im = ImageOps.exif_transpose(im)
    # 8-bit gray stays gray while resampling; everything else goes to 8-bit RGB
    if im.mode not in ("L", "RGB"):
        if im.mode in ("I;16", "I;16B", "I"):
            raise ValueError(f"{name}: unexpected {im.mode} image")
        im = im.convert("RGB")
    return im, quality


def png_bytes(im):
    buf = io.BytesIO()
    im.convert("RGB").save(buf, format="PNG", compress_level=PNG_LEVEL)
    return buf.getvalue()


def signature(im):
    """32x32 gray thumbnail, zero mean, unit norm: for the duplicate check."""
    a = np.asarray(im.convert("L").resize((32, 32), Image.BOX), dtype=np.float64).ravel()
    a -= a.mean()
    return a / max(np.linalg.norm(a), 1e-9)


def native_crops(name, im):
    """[(how, PNG bytes)]: NATIVE_CROP-square crops of the source at one scale of
    1/1 .. 1/NATIVE_MAX_FACTOR (drawn per photo), at distinct cells of the grid
    of NATIVE_CROP squares over the rescaled source (a seeded offset and choice)."""
    rng = seeded_rng("native", name)
    f = float(rng.uniform(1.0, NATIVE_MAX_FACTOR))
    w, h = im.size
    count = int(min(NATIVE_MAX_CROPS, max(1, round(w * h / 1e6 / NATIVE_MP_PER_CROP))))
    size = (max(NATIVE_CROP, round(w / f)), max(NATIVE_CROP, round(h / f)))
    if size != (w, h):
        im = im.resize(size, Image.LANCZOS)
    nx, ny = size[0] // NATIVE_CROP, size[1] // NATIVE_CROP
    ox = int(rng.integers(0, size[0] - nx * NATIVE_CROP + 1))
    oy = int(rng.integers(0, size[1] - ny * NATIVE_CROP + 1))
    cells = rng.choice(nx * ny, size=min(count, nx * ny), replace=False)
    out = []
    for c in sorted(int(c) for c in cells):
        x, y = ox + (c % nx) * NATIVE_CROP, oy + (c // nx) * NATIVE_CROP
        crop = im.crop((x, y, x + NATIVE_CROP, y + NATIVE_CROP))
        out.append((f"1/{f:.3f} crop {NATIVE_CROP}x{NATIVE_CROP} at {x},{y}", png_bytes(crop)))
    return out


def process(job):
    """One source -> its stored photo(s). Runs in a worker process."""
    name, split, data = job
    im, quality = decode(name, data)
    orig = im.size
    t = target_long(name, split, max(orig))
    stored = im
    if t != max(orig):
        s = t / max(orig)
        stored = im.resize((max(1, round(orig[0] * s)), max(1, round(orig[1] * s))), Image.LANCZOS)
    outs = [(name, f"{stored.size[0]}x{stored.size[1]}", png_bytes(stored))]
    if split == "train" and max(orig) > NATIVE_MAX and quality >= NATIVE_MIN_QUALITY:
        rgb = im.convert("RGB")
        for k, (how, png) in enumerate(native_crops(name, rgb)):
            outs.append((f"{name}@native{k}", how, png))
    return name, orig, quality, signature(im), outs


def write_if_changed(path, data):
    if os.path.exists(path):
        with open(path, "rb") as f:
            if f.read() == data:
                return False
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    return True


def check_sources():
    names = [s[0] for s in SOURCES]
    assert len(names) == len(set(names)), "duplicate names"
    for name, split, origin, path, lic in SOURCES:
        assert split in ("train", "heldout"), name
        assert origin in PACKAGES or is_repo(origin), (name, origin)
        assert "@" not in name and "/" not in name, name
        if TEST_SET_NAMES.search(os.path.basename(path)) or TEST_SET_NAMES.search(name):
            sys.exit(f"{name}: {path} looks like a test-set image of the literature; refused")
        if os.path.basename(path) in ("chelsea.png", "coffee.png", "camera.png", "rocket.jpg"):
            assert split == "heldout", name  # the photos of samples/, which the README shows


def check_duplicates(info):
    """Stops when two sources are the same photo (a repository or a package can
    carry another's photo, re-encoded or resized)."""
    names = sorted(info)
    sig = np.stack([info[n][1] for n in names])
    aspect = np.array([info[n][0][0] / info[n][0][1] for n in names])
    corr = sig @ sig.T
    worst = (0.0, "", "")
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            if abs(aspect[i] / aspect[j] - 1) > 0.03:
                continue
            worst = max(worst, (corr[i, j], names[i], names[j]))
            if corr[i, j] > DUPLICATE_CORRELATION:
                sys.exit(f"{names[i]} and {names[j]} look like the same photo (thumbnail correlation "
                         f"{corr[i, j]:.3f}); keep one")
    log(f"duplicate check: {len(names)} sources; the closest two of the same aspect ratio, {worst[1]} and "
        f"{worst[2]}, correlate {worst[0]:.3f} (limit {DUPLICATE_CORRELATION})")


def main(argv=None):
    ap = argparse.ArgumentParser(description="Build weights/data/train and heldout (see README.md).")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="worker processes")
    ap.add_argument("--repo", action="append", default=[], metavar="OWNER/NAME=GITDIR",
                    help="git directory of a repository (default cache/repos/OWNER+NAME.git)")
    args = ap.parse_args(argv)
    overrides = dict(r.split("=", 1) for r in args.repo)
    check_sources()
    os.makedirs(TRAIN, exist_ok=True)
    os.makedirs(HELDOUT, exist_ok=True)

    new_sha = {}
    jobs = []
    with tempfile.TemporaryDirectory(prefix="imrestore-data-") as tmp:
        extracted = {}
        for pkg in sorted({s[2] for s in SOURCES if not is_repo(s[2])}):
            deb, fresh = fetch_deb(pkg, PACKAGES[pkg])
            log(f"{'downloaded' if fresh else 'cached    '} {os.path.basename(deb)}")
            root = os.path.join(tmp, pkg)
            subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
            extracted[pkg] = root
        gitdirs = {repo: repo_dir(repo, overrides) for repo in sorted({s[2].split("@")[0] for s in SOURCES
                                                                      if is_repo(s[2])})}
        for name, split, origin, path, lic in SOURCES:
            if is_repo(origin):
                repo, commit = origin.split("@")
                data = read_repo_file(gitdirs[repo], repo, commit, path)
            else:
                with open(os.path.join(extracted[origin], path.lstrip("/")), "rb") as f:
                    data = f.read()
            h = sha256_bytes(data)
            new_sha[name] = h
            want = SOURCE_SHA256.get(name)
            if want is not None and want != h:
                sys.exit(f"{name}: {origin} {path} has sha256 {h}, expected {want}")
            jobs.append((name, split, data))

    meta = {s[0]: s for s in SOURCES}
    rows, info, written = [], {}, {"train": set(), "heldout": set()}
    counts = {"train": [0, 0, 0], "heldout": [0, 0, 0]}  # photos, bytes, pixels
    with multiprocessing.get_context("fork").Pool(max(1, args.jobs)) as pool:
        for name, orig, quality, sig, outs in pool.imap(process, jobs):
            _, split, origin, path, lic = meta[name]
            info[name] = (orig, sig)
            w, h = orig
            if (w, h) in TEST_SET_SIZES:
                log(f"note: {name} is {w}x{h}, a size of a test set of the literature; checked by hand: "
                    f"not one of its images")
            for out_name, stored, png in outs:
                d = TRAIN if split == "train" else HELDOUT
                changed = write_if_changed(os.path.join(d, out_name + ".png"), png)
                written[split].add(out_name + ".png")
                px = int(np.prod([int(v) for v in stored.split(" ")[2].split("x")])) if "crop" in stored \
                    else int(np.prod([int(v) for v in stored.split("x")]))
                counts[split][0] += 1
                counts[split][1] += len(png)
                counts[split][2] += px
                log(f"{'wrote    ' if changed else 'unchanged'} {split:7s} {out_name:36s} "
                    f"{w}x{h} (JPEG quality ~{quality:.0f}) -> {stored}  {len(png) / 1e6:6.2f} MB")
                rows.append((out_name, split, origin_label(origin), path, lic, f"{w}x{h}", stored,
                             sha256_bytes(png)))
    check_duplicates(info)

    # remove stale outputs (only PNGs this script could have written)
    for d, split in ((TRAIN, "train"), (HELDOUT, "heldout")):
        for f in sorted(os.listdir(d)):
            if f.endswith(".png") and f not in written[split]:
                os.remove(os.path.join(d, f))
                log(f"removed stale {split}/{f}")

    header = ("name", "split", "source", "source_path", "license", "original_size", "stored_size", "sha256")
    lines = ["\t".join(header)] + ["\t".join(r) for r in rows]
    changed = write_if_changed(MANIFEST, ("\n".join(lines) + "\n").encode("utf-8"))
    log(f"{'wrote' if changed else 'unchanged'} {os.path.relpath(MANIFEST)}")

    missing = [n for n in new_sha if n not in SOURCE_SHA256]
    if missing:
        log(f"note: {len(missing)} sources have no pinned SHA-256; their current sums:")
        for n in missing:
            log(f'    "{n}": "{new_sha[n]}",')
    for split in ("train", "heldout"):
        n, b, px = counts[split]
        log(f"{split}: {n} images ({len([s for s in SOURCES if s[1] == split])} sources), "
            f"{px / 1e6:.1f} MP, {b / 1e6:.1f} MB of PNG")


if __name__ == "__main__":
    main()
