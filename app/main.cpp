#include "cli.h"

int main(int argc, char** argv) {
    return imr::cli_main(argc, argv);
}
