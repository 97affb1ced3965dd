from barrierflow.cli import main

main()
